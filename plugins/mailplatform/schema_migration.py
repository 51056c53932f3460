"""The Cassandra schema migration DAG's decisions and steps (James's MigrationTask, cut for Airflow).

Pure parts first (unit-tested without servers): which mode a run is in, which transitions it
runs, which internal-date range a slice covers. Then the steps the DAG's tasks call: bump to 11
after a complete full-range denormalization, and run one small migration of the data layer
(11 -> 12 .. 14 -> 15), bumping the version only when it COMPLETED.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mailserver.cassandra.versions import LATEST, MIN_VERSION

if TYPE_CHECKING:
    from mailserver.cassandra.session import CassandraSession

AUTO, SLICE, UPGRADE = "auto", "slice", "upgrade"
MODES = (AUTO, SLICE, UPGRADE)
DENORMALIZED_VERSION = 11          # 10 -> 11 is the data-heavy step, run by Spark and by slices
SLICE_RUN_TYPES = ("backfill", "scheduled")
DENORMALIZATION_JOB = "message-denormalization-migration"

log = logging.getLogger(__name__)


class PlanError(ValueError):
    """The run cannot be planned: nothing has been written."""


@dataclass(frozen=True)
class Plan:
    mode: str
    current: int
    target: int
    transitions: tuple[int, ...]           # versions to reach, in order (upgrade mode)
    internal_date_from: str | None = None  # ISO, UTC (slice mode)
    internal_date_to: str | None = None

    @property
    def slice_needed(self) -> bool:
        return self.mode == SLICE and self.current < DENORMALIZED_VERSION

    @property
    def denormalization_needed(self) -> bool:
        return self.mode == UPGRADE and DENORMALIZED_VERSION in self.transitions

    def as_xcom(self) -> dict[str, Any]:
        return {**asdict(self), "transitions": list(self.transitions), "slice_needed": self.slice_needed,
                "denormalization_needed": self.denormalization_needed}


def run_mode(requested: str, run_type: str) -> str:
    """``auto``: backfill and scheduled runs migrate their data interval, manual runs upgrade."""
    if requested not in MODES:
        raise PlanError(f"unknown mode {requested!r}: one of {', '.join(MODES)}")
    if requested != AUTO:
        return requested
    return SLICE if str(run_type).lower() in SLICE_RUN_TYPES else UPGRADE


def _iso(value: datetime | str | None) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value.isoformat()


def slice_range(interval_start: datetime | None, interval_end: datetime | None,
                date_from: str | None = None, date_to: str | None = None) -> tuple[str, str]:
    """[from, to) of a slice: the explicit params when given, else the run's data interval."""
    start, end = _iso(date_from) or _iso(interval_start), _iso(date_to) or _iso(interval_end)
    if start is None or end is None:
        raise PlanError("a slice needs an internal-date range: run it as a backfill (its data interval), "
                        "or give internal_date_from and internal_date_to")
    if datetime.fromisoformat(start) >= datetime.fromisoformat(end):
        raise PlanError(f"empty internal-date range [{start}, {end})")
    return start, end


def plan(mode: str, current: int, target: int | None, available: Collection[int], *,
         interval: tuple[datetime | None, datetime | None] = (None, None),
         date_from: str | None = None, date_to: str | None = None,
         latest: int = LATEST, min_version: int = MIN_VERSION) -> Plan:
    """What one run does. ``available``: versions a migration leads to (James checks it up front)."""
    target = latest if target is None else target
    if not min_version <= target <= latest:
        raise PlanError(f"target version {target} is outside the supported range {min_version}..{latest}")
    if mode == SLICE:
        start, end = slice_range(*interval, date_from, date_to)
        return Plan(SLICE, current, target, (), start, end)
    transitions = tuple(range(current + 1, target + 1))   # at or above the target already: nothing
    missing = [v for v in transitions if v not in available]
    if missing:
        raise PlanError(f"No migration to version(s) {missing}: cannot upgrade from {current} to {target}")
    return Plan(UPGRADE, current, target, transitions)


# -- steps (they talk to Cassandra) -----------------------------------------------------------------

@contextmanager
def cassandra_session(conn_id: str = "cassandra_default") -> Iterator[CassandraSession]:
    """The data layer's session on the keyspace the ``cassandra_default`` connection names."""
    from mailplatform.hooks.cassandra import CassandraHook
    from mailserver.cassandra.config import CassandraConfig
    from mailserver.cassandra.session import CassandraSession

    hook = CassandraHook(conn_id)
    hosts, port, keyspace = hook.settings()
    conn = hook.get_connection(conn_id)
    config = CassandraConfig(hosts=tuple(hosts), port=port, keyspace=keyspace, username=conn.login or None,
                             password=conn.password or None, request_timeout=60.0)
    session = CassandraSession.connect(config)
    try:
        yield session
    finally:
        session.close()


def current_version(session: CassandraSession) -> int:
    from mailserver.cassandra.versions import SchemaVersionDAO

    return SchemaVersionDAO(session).version_or_default(log)


def denormalization_complete(report: Mapping[str, Any]) -> str | None:
    """Why a full-range denormalization report does not allow the bump to 11 (None: it does)."""
    options = report.get("runningOptions") or {}
    if options.get("internalDateFrom") or options.get("internalDateTo"):
        return "the run covered a slice only: the bump needs a run over every internal date"
    if report.get("outcome") != "COMPLETED":
        return f"the denormalization ended {report.get('outcome')}"
    if report.get("remaining"):
        return f"incomplete rows remain: {report['remaining']}"
    return None


def bump_to_denormalized(session: CassandraSession, report: Mapping[str, Any],
                         logger: logging.Logger = log) -> bool:
    """10 -> 11 after a complete full-range Spark run; False when the version was already reached."""
    from mailserver.cassandra.migrations.base import MigrationResult, MigrationStatus
    from mailserver.cassandra.migrations.runner import MigrationPartial
    from mailserver.cassandra.versions import SchemaVersionDAO

    dao = SchemaVersionDAO(session)
    if dao.version_or_default(logger) >= DENORMALIZED_VERSION:
        logger.info("Schema version %d already reached: skipping its migration", DENORMALIZED_VERSION)
        return False
    reason = denormalization_complete(report)
    if reason:
        logger.warning("Migrating to version %d partially done. Please check logs and re-run (%s)",
                       DENORMALIZED_VERSION, reason)
        counters = {k: v for k, v in report.items() if isinstance(v, int) and not isinstance(v, bool)}
        raise MigrationPartial(DENORMALIZED_VERSION, MigrationResult(MigrationStatus.PARTIAL, counters))
    dao.update_version(DENORMALIZED_VERSION)
    logger.info("Migrating to version %d done", DENORMALIZED_VERSION)
    return True


def run_transition(session: CassandraSession, version: int, logger: logging.Logger = log) -> dict[str, Any] | None:
    """One small transition (to ``version``) through the data layer's runner, which bumps on COMPLETED.

    None when the version was already reached. Raises MigrationPartial (not bumped) or
    RuntimeError when the keyspace is not right below ``version`` (an earlier step is missing).
    """
    from mailserver.cassandra.migrations.runner import migrate

    current = current_version(session)
    if current >= version:
        logger.info("Schema version %d already reached: skipping its migration", version)
        return None
    if current != version - 1:
        raise RuntimeError(f"cannot migrate to {version} from {current}: version {version - 1} is not reached")
    result = migrate(session, target=version, logger=logger)[version]
    return {"status": str(result.status), "counters": result.counters}
