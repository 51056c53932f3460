"""The envelope every job runs in (``job_run.run_job``): audit rows, the report, the exit status, the
session stopped whatever happens. Cassandra, S3 and Spark are replaced by recorders."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from spark_apps.common import job_run
from spark_apps.common.job_run import RunOptions, exit_status, run_job
from spark_apps.common.settings import JobSettings

SETTINGS = JobSettings(None, "127.0.0.1", 9042, "mail", None, None)
OPTIONS = RunOptions("dag/run-1", False, None, 8, "alice", "dag", "run-1", None, 10)


class Recorders:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.audit: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.reports: list[tuple[dict[str, Any], str]] = []
        self.spark = SimpleNamespace(stopped=False)
        self.spark.stop = lambda: setattr(self.spark, "stopped", True)
        recorders = self

        class AuditLog:
            def __init__(self, _cql: Any) -> None: ...

            def write(self, record: Any) -> None:
                recorders.audit.append((record.outcome, dict(record.counts_before), dict(record.params)))

        monkeypatch.setattr(job_run, "CqlEndpoint", lambda *_args: SimpleNamespace(session=lambda: "cql"))
        monkeypatch.setattr(job_run, "ensure_tables", lambda _cql: None)
        monkeypatch.setattr(job_run, "AuditLog", AuditLog)
        monkeypatch.setattr(job_run, "build_session", lambda _job, _settings: self.spark)
        monkeypatch.setattr(job_run, "write_report",
                            lambda report, location: self.reports.append((report, location.uri)))


def test_a_partial_run_is_audited_reported_and_exits_1(monkeypatch, capsys):
    recorders = Recorders(monkeypatch)
    report = {"type": "some-job", "outcome": "PARTIAL", "detected": {"orphan": 2}, "remaining": {"orphan": 1},
              "errors": [{"id": 1, "error": "boom"}]}

    status = run_job("some-job", SETTINGS, OPTIONS, {"dryRun": False}, lambda spark, endpoint: report)

    assert status == 1
    assert [outcome for outcome, _, _ in recorders.audit] == ["RUNNING", "PARTIAL"]
    assert recorders.audit[-1][1:] == ({"orphan": 2}, {"dryRun": False})
    assert recorders.reports == [(report, "s3://maintenance-reports/reports/dag__run-1/some-job.json")]
    out = capsys.readouterr().out
    assert out.startswith("REPORT {") and "SUMMARY some-job: PARTIAL" in out
    assert recorders.spark.stopped


def test_a_crashed_job_leaves_its_audit_row_failed_and_no_report(monkeypatch):
    recorders = Recorders(monkeypatch)

    def crash(spark: Any, endpoint: Any) -> dict[str, Any]:
        raise RuntimeError("executor lost")

    with pytest.raises(RuntimeError, match="executor lost"):
        run_job("some-job", SETTINGS, OPTIONS, {}, crash)
    assert [outcome for outcome, _, _ in recorders.audit] == ["RUNNING", "FAILED"]
    assert recorders.reports == [] and recorders.spark.stopped


def test_a_job_chooses_its_audit_counts_and_its_summary(monkeypatch, capsys):
    recorders = Recorders(monkeypatch)
    report = {"type": "scan", "outcome": "COMPLETED", "procedures": {"messages": {"detected": {"x": 1}}}}

    status = run_job("scan", SETTINGS, OPTIONS, {}, lambda spark, endpoint: report,
                     counts=lambda r: ({"messages": r["procedures"]["messages"]["detected"]}, {}), summary=None)

    assert status == 0 and recorders.audit[-1][:2] == ("COMPLETED", {"messages": {"x": 1}})
    assert "SUMMARY" not in capsys.readouterr().out


@pytest.mark.parametrize(("outcome", "status"), [("COMPLETED", 0), ("DRY_RUN", 0), ("PARTIAL", 1), ("FAILED", 1)])
def test_the_exit_status_is_the_outcome(outcome, status):
    assert exit_status(outcome) == status
