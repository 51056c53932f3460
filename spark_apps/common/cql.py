"""Point reads and writes with the DataStax driver, from the Spark driver or from executors.

The connector reads whole tables well, but repairs need what it cannot give from PySpark:
a re-read at SERIAL consistency just before a fix (a Spark snapshot is stale by definition),
lightweight transactions, and counter deltas. One ``Cluster`` per Python worker process and
per endpoint, created on first use and reused by every partition that process runs, and by the
threads of a partition that repairs several items at once (thread-safe).
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_LOCK = threading.Lock()
_SESSIONS: dict[tuple[str, int, str], CqlSession] = {}


def close_sessions() -> None:
    """Shut down every cached session's ``Cluster``; the next ``CqlEndpoint.session()`` connects anew.

    A process that outlives its jobs (the test process runs them in-process) calls this when done:
    the driver's scheduler and reactor threads must stop before interpreter shutdown, which refuses
    the executor work they still submit (a schema event from a dropped keyspace, a reconnection).
    ``atexit`` alone runs too late for that, after ``concurrent.futures`` has shut down.
    """
    with _LOCK:
        sessions = list(_SESSIONS.values())
        _SESSIONS.clear()
    for session in sessions:
        session.cluster.shutdown()


atexit.register(close_sessions)


@dataclass(frozen=True)
class CqlEndpoint:
    """What an executor needs to reach Cassandra: picklable, no live objects."""

    hosts: str
    port: int
    keyspace: str
    username: str | None = None
    password: str | None = None
    request_timeout: float = 30.0

    def session(self) -> CqlSession:
        key = (self.hosts, self.port, self.keyspace)
        with _LOCK:
            session = _SESSIONS.get(key)
            if session is None:
                session = _SESSIONS[key] = CqlSession(self)
        return session


class CqlSession:
    """QUORUM statements, SERIAL ("strong") reads, LWTs; rows as dicts; prepared once."""

    def __init__(self, endpoint: CqlEndpoint) -> None:
        from cassandra import ConsistencyLevel
        from cassandra.auth import PlainTextAuthProvider
        from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
        from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
        from cassandra.query import dict_factory

        policy = TokenAwarePolicy(DCAwareRoundRobinPolicy())
        profiles = {
            EXEC_PROFILE_DEFAULT: ExecutionProfile(
                load_balancing_policy=policy, consistency_level=ConsistencyLevel.LOCAL_QUORUM,
                serial_consistency_level=ConsistencyLevel.SERIAL, request_timeout=endpoint.request_timeout,
                row_factory=dict_factory),
            "serial": ExecutionProfile(
                load_balancing_policy=policy, consistency_level=ConsistencyLevel.SERIAL,
                serial_consistency_level=ConsistencyLevel.SERIAL, request_timeout=endpoint.request_timeout,
                row_factory=dict_factory),
        }
        auth = PlainTextAuthProvider(endpoint.username, endpoint.password) if endpoint.username else None
        self.cluster = Cluster([h.strip() for h in endpoint.hosts.split(",") if h.strip()], port=endpoint.port,
                               auth_provider=auth, execution_profiles=profiles, connect_timeout=15)
        self.session = self.cluster.connect(endpoint.keyspace)
        self._prepared: dict[str, Any] = {}
        self._preparing = threading.Lock()   # the driver's Session is thread-safe; this cache is made so

    def _statement(self, cql: str) -> Any:
        stmt = self._prepared.get(cql)
        if stmt is None:
            with self._preparing:   # several repair threads: one prepare per statement, not one each
                stmt = self._prepared.get(cql)
                if stmt is None:
                    stmt = self._prepared[cql] = self.session.prepare(cql)
        return stmt

    def prepared(self, cql: str) -> Any:
        """The statement prepared once for this session, for callers that bind, page or batch it themselves."""
        return self._statement(cql)

    def execute(self, cql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return list(self.session.execute(self._statement(cql), params))

    def serial_read(self, cql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """A read that first completes any in-flight LWT on the partition (James's STRONG read)."""
        return list(self.session.execute(self._statement(cql), params, execution_profile="serial"))

    def serial_read_many(self, cql: str, params: Sequence[Sequence[Any]],
                         concurrency: int = 8) -> list[list[dict[str, Any]]]:
        """``serial_read`` of one statement per parameter set, ``concurrency`` in flight; results in order."""
        from cassandra.concurrent import execute_concurrent_with_args

        results = execute_concurrent_with_args(self.session, self._statement(cql), list(params),
                                               concurrency=concurrency, execution_profile="serial")
        return [list(r.result_or_exc) for r in results]

    def lwt(self, cql: str, params: Sequence[Any] = ()) -> bool:
        """A conditional statement; True when it was applied."""
        rows = self.execute(cql, params)
        return bool(rows and rows[0].get("[applied]"))
