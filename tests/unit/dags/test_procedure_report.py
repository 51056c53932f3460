"""The ``report`` task of ``procedure_dag`` as the procedures that differ configure it: a report name
chosen by the params, a report that is never retried, a report without a run note."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

PARTIAL = {"type": "flush-delayed-mails", "outcome": "PARTIAL", "delayedMails": 3, "flushedMails": 2,
           "unresolved": 1, "errors": [], "unresolvedItems": [{"name": "mail-1"}]}


class FakeTaskInstance:
    run_id = "manual__1"

    def __init__(self, dag_id: str, job_task_id: str) -> None:
        self.dag_id, self.job_task_id = dag_id, job_task_id
        self.pushed: dict[str, Any] = {}

    def get_task_states(self, dag_id: str, run_ids: list[str]) -> dict[str, dict[str, str]]:
        return {self.run_id: {"check_params": "success", self.job_task_id: "failed"}}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def report_of(dag_id: str, job_task_id: str, params: dict[str, Any]) -> tuple[Any, FakeTaskInstance, dict]:
    from airflow.dag_processing.dagbag import DagBag

    dag = DagBag(dag_folder=os.path.join(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], f"{dag_id}.py")).dags[dag_id]
    ti = FakeTaskInstance(dag_id, job_task_id)
    context = {"dag": SimpleNamespace(dag_id=dag_id), "run_id": ti.run_id, "ti": ti, "params": params}
    return dag.get_task("report"), ti, context


def test_the_report_name_follows_the_scope_and_a_missing_report_is_not_retried(monkeypatch):
    from airflow.sdk.exceptions import AirflowFailException
    from mailplatform.hooks.reports import MaintenanceReportHook

    asked: list[str] = []

    def missing(self: Any, name: str, key: str) -> dict[str, Any]:
        asked.append(name)
        raise FileNotFoundError(key)

    monkeypatch.setattr(MaintenanceReportHook, "read", missing)
    task, _ti, context = report_of("redeliver_event_dead_letters", "detect_redeliver_verify", {"scope": "group"})
    with pytest.raises(AirflowFailException, match="see the detect_redeliver_verify log"):
        task.python_callable(**context)
    from spark_apps.jobs.redeliver_event_dead_letters import task_type

    assert asked == [task_type("group")] and task_type("group") != task_type("all")


def test_a_failed_flush_shows_its_summary_and_leaves_no_repair_note(monkeypatch, capsys):
    from airflow.sdk.exceptions import AirflowException
    from mailplatform.hooks.reports import MaintenanceReportHook

    monkeypatch.setattr(MaintenanceReportHook, "read", lambda self, name, key: PARTIAL)
    task, ti, context = report_of("flush_delayed_mails", "detect_flush_verify", {"queue": "outgoing"})
    with pytest.raises(AirflowException, match="PARTIAL"):
        task.python_callable(**context)
    assert ti.pushed["return_value"]["flushedMails"] == 2 and "unresolvedItems" not in ti.pushed["return_value"]
    assert "run_note" not in ti.pushed   # its summary would say "fixed 0": the flushed mails are flushedMails
    assert "delayed" in capsys.readouterr().out   # the procedure's own lines are printed
