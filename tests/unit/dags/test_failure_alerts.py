"""Failure alerts go to the ``mailplatform_alerts`` connection: a webhook gets the run's facts as JSON."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import SimpleNamespace

import pytest
import structlog.testing


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[dict]]]:
    received: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/alerts", received
    finally:
        server.shutdown()
        thread.join(timeout=10)


def failed_task_context() -> dict:
    ti = SimpleNamespace(dag_id="solve_message_inconsistencies", run_id="manual__1", task_id="check_params",
                         try_number=1)
    return {"ti": ti, "dag_run": SimpleNamespace(dag_id=ti.dag_id, run_id=ti.run_id, logical_date=None),
            "task": SimpleNamespace(owner="mail-ops"),
            "exception": ValueError("param user: no user nobody@ops.test\nmore")}


def test_a_failed_task_is_posted_to_the_webhook_of_the_connection(monkeypatch, webhook):
    from mailplatform.notifiers import PlatformAlertNotifier

    url, received = webhook
    monkeypatch.setenv("AIRFLOW_CONN_MAILPLATFORM_ALERTS", json.dumps({"conn_type": "http", "host": url}))

    PlatformAlertNotifier("task_failed").notify(failed_task_context())

    assert received == [{"event": "task_failed", "dag_id": "solve_message_inconsistencies", "run_id": "manual__1",
                         "task_id": "check_params", "try_number": 1, "owner": "mail-ops",
                         "error": "param user: no user nobody@ops.test", "logical_date": None}]


def test_without_the_connection_the_alert_is_only_logged(monkeypatch):
    from mailplatform.notifiers import PlatformAlertNotifier

    monkeypatch.delenv("AIRFLOW_CONN_MAILPLATFORM_ALERTS", raising=False)
    with structlog.testing.capture_logs() as logs:   # Airflow's loggers are structlog's
        PlatformAlertNotifier("run_failed").notify(failed_task_context())   # no exception: a task never fails for it

    [warning] = [entry for entry in logs if entry["log_level"] == "warning"]
    assert warning["event"].startswith("no mailplatform_alerts connection: alert not sent: ")
    assert json.loads(warning["event"].split(": ", 1)[1].removeprefix("alert not sent: "))["event"] == "run_failed"


def test_the_webhook_url_from_an_airflow_connection_uri():
    from airflow.sdk import Connection
    from mailplatform.notifiers import webhook_url

    conn = Connection.from_uri("https://hooks.example.org:8443/alerts/mail", conn_id="mailplatform_alerts")
    assert webhook_url(conn) == "https://hooks.example.org:8443/alerts/mail"


def test_a_failed_run_of_dag_test_alerts_through_the_serialized_dag(monkeypatch, webhook):
    """``dag.test()`` runs the DAG's callbacks on the scheduler's copy of the DAG, which has no Jinja environment."""
    from airflow.models.dagrun import DagRun
    from airflow.serialization.serialized_objects import DagSerialization

    from tests.support.dag_files import parsed_dag

    url, received = webhook
    monkeypatch.setenv("AIRFLOW_CONN_MAILPLATFORM_ALERTS", json.dumps({"conn_type": "http", "host": url}))
    dag = parsed_dag("solve_message_inconsistencies")
    # What dag.test() does: the serialized DAG carries the real DAG's callbacks.
    scheduler_dag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    scheduler_dag.on_failure_callback = dag.on_failure_callback
    run = DagRun(dag_id=dag.dag_id, run_id="manual__1", run_type="manual")

    run.execute_dag_callbacks(dag=scheduler_dag, success=False, reason="task_failure")

    assert [(alert["event"], alert["dag_id"], alert["run_id"], alert["error"]) for alert in received] == [
        ("run_failed", "solve_message_inconsistencies", "manual__1", "task_failure")]
