"""A thin wrapper over the DataStax driver session used by every Cassandra adapter.

Why a wrapper: one place for consistency levels (QUORUM for normal statements, SERIAL for
lightweight transactions as James does), prepared-statement caching, and the fault seam.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from cassandra import ConsistencyLevel
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile, Session
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy
from cassandra.query import BatchStatement, BatchType, PreparedStatement, dict_factory

from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.faults import FaultInjector

LWT_PROFILE = "lwt"
# Protocol v4, not v5: v5 frames every request and response in checksummed segments, and the
# driver computes those CRCs in pure Python (cassandra/segment.py): 20-25 % more driver CPU per
# request, measured on single-row reads (issue 16). v4 carries everything these adapters use.
PROTOCOL_VERSION = 4


class CassandraSession:
    def __init__(self, cluster: Cluster, session: Session, config: CassandraConfig) -> None:
        self.cluster = cluster
        self.session = session
        self.config = config
        self.keyspace = config.keyspace
        self.faults = FaultInjector()
        self._prepared: dict[str, PreparedStatement] = {}
        self._lock = threading.Lock()

    @classmethod
    def connect(cls, config: CassandraConfig, *, use_keyspace: bool = True) -> CassandraSession:
        policy = TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=config.local_dc))
        profiles = {
            EXEC_PROFILE_DEFAULT: ExecutionProfile(
                load_balancing_policy=policy, consistency_level=ConsistencyLevel.QUORUM,
                serial_consistency_level=ConsistencyLevel.SERIAL, request_timeout=config.request_timeout,
                row_factory=dict_factory),
            # "STRONG" reads in James: SERIAL consistency, so an in-flight LWT is completed first.
            LWT_PROFILE: ExecutionProfile(
                load_balancing_policy=policy, consistency_level=ConsistencyLevel.SERIAL,
                serial_consistency_level=ConsistencyLevel.SERIAL, request_timeout=config.request_timeout,
                row_factory=dict_factory),
        }
        auth = PlainTextAuthProvider(config.username, config.password) if config.username else None
        cluster = Cluster(list(config.hosts), port=config.port, auth_provider=auth,
                          execution_profiles=profiles, protocol_version=PROTOCOL_VERSION, connect_timeout=10)
        session = cluster.connect()
        if use_keyspace:
            session.set_keyspace(config.keyspace)
        return cls(cluster, session, config)

    def close(self) -> None:
        self.cluster.shutdown()

    def __enter__(self) -> CassandraSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def prepare(self, cql: str) -> PreparedStatement:
        with self._lock:
            stmt = self._prepared.get(cql)
        if stmt is None:
            stmt = self.session.prepare(cql)
            with self._lock:
                self._prepared[cql] = stmt
        return stmt

    def execute(self, cql: str, params: Sequence[Any] | dict | None = None, *, strong: bool = False,
                prepared: bool = True) -> list[dict[str, Any]]:
        """Run a statement; rows as dicts. ``strong`` reads at SERIAL consistency (James's STRONG)."""
        self.faults.check(cql)
        profile = LWT_PROFILE if strong else EXEC_PROFILE_DEFAULT
        statement = self.prepare(cql) if prepared and params is not None else cql
        return list(self.session.execute(statement, params, execution_profile=profile))

    def start(self, cql: str, params: Sequence[Any]) -> Callable[[], None]:
        """Send a write now; returns the function that waits for its answer and raises its failure.

        For a caller that overlaps the write with other I/O (the mail queue publishes to RabbitMQ
        meanwhile, as James does). An injected fault surfaces at the wait, as a real failure would.
        """
        try:
            self.faults.check(cql)
        except Exception as exc:
            failure = exc

            def failed() -> None:
                raise failure
            return failed
        future = self.session.execute_async(self.prepare(cql), params)

        def wait() -> None:
            future.result()
        return wait

    def execute_concurrently(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Independent writes sent together and awaited together (James merges them the same way).

        Every statement is attempted even when another fails; the first failure is raised once all
        have answered, so a caller sees what it would have seen doing them one by one.
        """
        waits = [self.start(cql, params) for cql, params in statements]
        failure = None
        for wait in waits:
            try:
                wait()
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure

    def read_concurrently(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[list[dict[str, Any]]]:
        """Independent reads sent together and awaited together: one wait for the lot, not one a read."""
        for cql, _ in statements:
            self.faults.check(cql)
        futures = [self.session.execute_async(self.prepare(cql), params) for cql, params in statements]
        return [list(future.result()) for future in futures]

    def execute_partition_batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Writes to rows of one partition key, in tables of one keyspace, as one unlogged batch.

        Cassandra applies such a batch as a single mutation (one commit-log entry, all or nothing,
        no batch log), for one request instead of one per table. A batch mixing partition keys
        would lose that, so do not send one here. A fault injected into any statement fails the
        batch before anything is sent, as the server would fail it whole.
        """
        if len(statements) == 1:
            self.execute(*statements[0])
            return
        batch = BatchStatement(batch_type=BatchType.UNLOGGED)
        for cql, params in statements:
            self.faults.check(cql)
            batch.add(self.prepare(cql), params)
        self.session.execute(batch)

    def execute_logged_batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Writes to several partitions that must all happen or none: one logged batch (the batch
        log replays it if the coordinator dies half-way), as James's LOGGED batches."""
        batch = BatchStatement(batch_type=BatchType.LOGGED)
        for cql, params in statements:
            self.faults.check(cql)
            batch.add(self.prepare(cql), params)
        self.session.execute(batch)

    def execute_counter_batch(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Counter updates sent as one request: a client dying after sending it cannot split them."""
        batch = BatchStatement(batch_type=BatchType.COUNTER)
        for cql, params in statements:
            self.faults.check(cql)
            batch.add(self.prepare(cql), params)
        self.session.execute(batch)

    def execute_lwt(self, cql: str, params: Sequence[Any] | None = None) -> bool:
        """A conditional statement (IF NOT EXISTS / IF col = ?); True when applied."""
        return self.execute_cas(cql, params)[0]

    def execute_cas(self, cql: str, params: Sequence[Any] | None = None) -> tuple[bool, dict[str, Any]]:
        """A conditional statement and, when it was not applied, the row as Cassandra saw it (the
        current values of the columns in its IF), so the caller can retry without a SERIAL read."""
        self.faults.check(cql)
        rows = list(self.session.execute(self.prepare(cql), params))
        row = rows[0] if rows else {}
        return bool(row.get("[applied]")), row

    def one(self, cql: str, params: Sequence[Any] | None = None, *, strong: bool = False) -> dict[str, Any] | None:
        rows = self.execute(cql, params, strong=strong)
        return rows[0] if rows else None
