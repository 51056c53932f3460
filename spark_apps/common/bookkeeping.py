"""The platform's own tables beside James's: per-slice checkpoints and the audit trail.

* ``maintenance_checkpoints``: one row per finished slice of a run (``run_key`` is the Airflow
  DAG run, so a retried or restarted Spark task resumes instead of redoing the work); it keeps
  the slice's counters and outcomes, so the final report of a resumed run is whole.
* ``maintenance_audit``: one row per run of a procedure: who, when, the DAG run, the params,
  the counts before and after, the outcome and where the report is.

Both are created on first use (``IF NOT EXISTS``): a keyspace written by James has neither.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from spark_apps.common.cql import CqlSession

CHECKPOINTS_DDL = (
    "CREATE TABLE IF NOT EXISTS maintenance_checkpoints (job text, run_key text, slice int, "
    "counters map<text, bigint>, outcomes text, done_at timestamp, PRIMARY KEY ((job, run_key), slice))"
)
AUDIT_DDL = (
    "CREATE TABLE IF NOT EXISTS maintenance_audit (job text, started_at timestamp, run_key text, "
    "triggered_by text, dag_id text, dag_run_id text, params text, counts_before text, counts_after text, "
    "outcome text, report_uri text, finished_at timestamp, PRIMARY KEY ((job), started_at, run_key)) "
    "WITH CLUSTERING ORDER BY (started_at DESC, run_key ASC)"
)


def ensure_tables(cql: CqlSession) -> None:
    cql.session.execute(CHECKPOINTS_DDL, timeout=60)
    cql.session.execute(AUDIT_DDL, timeout=60)


@dataclass
class SliceResult:
    """What repairing one slice did: counters and the per-item outcomes worth reporting."""

    counters: dict[str, int] = field(default_factory=dict)
    fixed: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)

    def items(self) -> int:
        """Items this slice handled: fixed, skipped or failed."""
        return sum(self.counters.values()) + len(self.failures)

    def to_outcomes_json(self) -> str:
        return json.dumps({"fixed": self.fixed, "failures": self.failures}, default=str)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> SliceResult:
        outcomes = json.loads(row.get("outcomes") or "{}")
        return cls(dict(row.get("counters") or {}), outcomes.get("fixed", []), outcomes.get("failures", []))


class Checkpoints:
    def __init__(self, cql: CqlSession, job: str, run_key: str) -> None:
        self.cql, self.job, self.run_key = cql, job, run_key

    def done(self) -> dict[int, SliceResult]:
        rows = self.cql.execute("SELECT slice, counters, outcomes FROM maintenance_checkpoints "
                                "WHERE job = ? AND run_key = ?", (self.job, self.run_key))
        return {r["slice"]: SliceResult.from_row(r) for r in rows}

    def mark_done(self, slice_: int, result: SliceResult) -> None:
        self.cql.execute("INSERT INTO maintenance_checkpoints (job, run_key, slice, counters, outcomes, done_at) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (self.job, self.run_key, slice_, result.counters, result.to_outcomes_json(),
                          datetime.now(UTC)))


@dataclass
class AuditRecord:
    job: str
    run_key: str
    started_at: datetime
    triggered_by: str
    dag_id: str | None
    dag_run_id: str | None
    params: dict[str, Any]
    counts_before: dict[str, Any] = field(default_factory=dict)
    counts_after: dict[str, Any] = field(default_factory=dict)
    outcome: str = "RUNNING"
    report_uri: str | None = None


class AuditLog:
    def __init__(self, cql: CqlSession) -> None:
        self.cql = cql

    def write(self, record: AuditRecord) -> None:
        """Upsert: written at start (RUNNING) and again at the end, so a killed run leaves a trace."""
        finished = None if record.outcome == "RUNNING" else datetime.now(UTC)
        self.cql.execute(
            "INSERT INTO maintenance_audit (job, started_at, run_key, triggered_by, dag_id, dag_run_id, params, "
            "counts_before, counts_after, outcome, report_uri, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.job, record.started_at, record.run_key, record.triggered_by, record.dag_id, record.dag_run_id,
             json.dumps(record.params, sort_keys=True), json.dumps(record.counts_before, sort_keys=True),
             json.dumps(record.counts_after, sort_keys=True), record.outcome, record.report_uri, finished))
