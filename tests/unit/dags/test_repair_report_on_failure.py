"""A repair DAG whose run left failed items fails its ``report`` task, and still leaves the summary as
the task's XCom (WebAdmin's task view reads it: James's messageFailures, reIndexFailedMessagesOf)."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

PARTIAL = {"type": "full-reindexing", "outcome": "PARTIAL", "failedReprocessedMailCount": 2,
           "messageFailures": {"c0ffee00-1111-11ef-8000-000000000001": [{"uid": 1}, {"uid": 36}]},
           "mailboxFailures": [], "errors": [{"uid": 1, "error": "ConnectionError"}], "unresolved": 2}


class FakeTaskInstance:
    dag_id = "reindex_mailboxes"
    run_id = "webadmin__1"

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def get_task_states(self, dag_id: str, run_ids: list[str]) -> dict[str, dict[str, str]]:
        return {self.run_id: {"check_params": "success", "detect_repair_verify": "success"}}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


@pytest.fixture(scope="module")
def report_task():
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow < 3.3
        from airflow.models.dagbag import DagBag
    dag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"]).get_dag("reindex_mailboxes")
    return dag, dag.get_task("report")


@pytest.mark.parametrize(("content", "fails"), [(PARTIAL, True), ({**PARTIAL, "outcome": "COMPLETED"}, False)])
def test_the_summary_is_the_xcom_whether_the_run_converged_or_not(report_task, monkeypatch, content, fails):
    from airflow.sdk.exceptions import AirflowException
    from mailplatform.hooks.reports import MaintenanceReportHook

    read: list[tuple[str, str]] = []
    monkeypatch.setattr(MaintenanceReportHook, "read", lambda self, job, key: read.append((job, key)) or content)
    dag, task = report_task
    ti = FakeTaskInstance()
    context = {"dag": SimpleNamespace(dag_id=dag.dag_id), "run_id": "webadmin__1", "ti": ti}
    if fails:
        with pytest.raises(AirflowException, match="PARTIAL"):
            task.python_callable(**context)
        summary = ti.pushed["return_value"]
    else:
        summary = task.python_callable(**context)
        assert "return_value" not in ti.pushed   # Airflow pushes the return value itself
    assert read == [("full-reindexing", "reindex_mailboxes/webadmin__1")]
    # The run's note, converged or not (the listener of plugins/mailplatform_run_notes.py puts it on the run).
    assert ti.pushed["run_note"].startswith(f"**full-reindexing: {content['outcome']}**")
    note = ti.pushed["run_note"]
    assert "s3://maintenance-reports/reports/reindex_mailboxes__webadmin__1/full-reindexing.json" in note
    assert summary["messageFailures"] == PARTIAL["messageFailures"] and "errors" not in summary
