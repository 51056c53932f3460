"""Maintenance DAGs end to end: ``dag.test()`` against the real stack and a real WebAdmin.

One mail server (roles ``webadmin,tasks``) serves the maintenance keyspace for the whole
session: the DAGs' health sensors and maintenance-mode tasks talk to it through the
``webadmin_default`` connection, and ``cassandra_default`` names the maintenance keyspace, so
the Spark jobs scan only what the tests seeded.

The Spark task of a DAG run here runs its job on the session's driver JVM
(``tests/support/spark_in_process.py``): the job file, arguments and environment the operator
would submit, without a JVM start of its own per run. The submit itself is covered elsewhere:
tests marked ``spark_submit`` here (the standalone cluster, the vault purge), the DAG runs the
scheduler starts (``tests/e2e/airflow_api``, ``live_airflow``), and the zip every job imports from
(``tests/unit/spark_apps/test_job_zip_imports.py``).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest

from include.connections import airflow_connections
from tests.support.dag_files import parsed_dag
from tests.support.dag_test_sync import bundles_synced_once
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, WebAdminProcess, server_env
from tests.support.spark_in_process import execute_in_process

TEST_RETRY_DELAY = timedelta(seconds=1)

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


@pytest.fixture(autouse=True)
def spark_jobs_in_the_test_process(request: pytest.FixtureRequest) -> Iterator[None]:
    """Spark tasks run their job in this process (see the module docstring) unless the test is
    marked ``spark_submit``."""
    if request.node.get_closest_marker("spark_submit"):
        yield
        return
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    with mock.patch.object(SparkSubmitOperator, "execute", execute_in_process):
        yield


@pytest.fixture(scope="package", autouse=True)
def dag_folder_synced_once() -> Iterator[None]:
    """``dag.test()`` writes the whole DAG folder to Airflow's database at its first run only
    (``tests/support/dag_test_sync.py``)."""
    with bundles_synced_once():
        yield


@pytest.fixture(scope="session")
def maintenance_webadmin(stack, maintenance_cassandra, unique, tmp_path_factory) -> Iterator[WebAdminProcess]:
    from mailserver.mailets.config import DEFAULT_FILE

    tmp = tmp_path_factory.mktemp("maintenance-webadmin")
    with IsolatedVhost(stack, f"maint-{unique}") as vhost:
        env = server_env(stack, vhost.amqp_url, maintenance_cassandra.keyspace, f"maint-{unique}", DEFAULT_FILE,
                         MAILSERVER_ROLES="webadmin,tasks")
        server = WebAdminProcess(env, tmp / "mailserver.log").start()
        try:
            yield server
        finally:
            server.terminate()


@pytest.fixture(scope="session")
def maintenance_airflow(stack, spark_env, airflow_db, maintenance_cassandra, maintenance_webadmin) -> Iterator[None]:
    """Airflow connections of the maintenance world (keyspace and WebAdmin), restored afterwards."""
    conns = airflow_connections(stack, spark_master="local[2]", keyspace=maintenance_cassandra.keyspace,
                                webadmin_url=maintenance_webadmin.webadmin_url,
                                webadmin_password=WEBADMIN_PASSWORD)
    saved = {k: os.environ.get(k) for k in conns}
    os.environ.update(conns)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load_dag(dag_id: str) -> Any:
    # Its own file alone (each DAG lives in the file of its id): about half a second a run less than
    # the whole folder, whose import tests/unit/dags checks.
    dag = parsed_dag(dag_id)
    assert dag is not None, f"no DAG {dag_id}"
    # dag.test() sleeps through each retry delay (30 s to 2 min here). Tests that make a task fail
    # keep its retries (they assert on every attempt) but not the wait; the DAGs' real delays are
    # checked by tests/unit/dags.
    for task in dag.tasks:
        task.retry_delay = TEST_RETRY_DELAY
        task.retry_exponential_backoff = False
    return dag


def run_dag(dag_id: str, conf: dict[str, Any] | None = None) -> tuple[Any, dict[str, str], dict[str, Any]]:
    """``dag.test()`` of a maintenance DAG: the run, the state of each task, and the report task's XCom."""
    dag = load_dag(dag_id)
    run = dag.test(run_conf=conf or {})
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    states = {task_id: ti.state for task_id, ti in tis.items()}
    summary = tis["report"].xcom_pull(task_ids="report") if "report" in tis else None
    return run, states, summary or {}


def webadmin_get(server: WebAdminProcess, path: str) -> Any:
    import json

    request = urllib.request.Request(server.webadmin_url + path, headers={"Password": WEBADMIN_PASSWORD})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def assert_refused(dag_id: str, conf: dict[str, Any], match: str) -> None:
    """Refused before any work: by the trigger's param schema (an error naming the param) or, for
    ranges and combinations, by the ``check_params`` first task: the run fails, its refusal names the
    param, and nothing else succeeds."""
    import re

    try:
        run = load_dag(dag_id).test(run_conf=conf)
    except Exception as exc:   # the schema's refusal, whatever Airflow wraps it in
        assert re.search(match, str(exc)), exc
        return
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    states = {task_id: ti.state for task_id, ti in tis.items()}
    assert run.state == "failed", states   # a refused run is red, never green
    assert states.get("check_params") == "failed", states
    refusal = tis["check_params"].xcom_pull(task_ids="check_params", key="refusal")
    assert refusal and re.search(match, refusal), refusal
    assert not [task for task, state in states.items() if state == "success"], states
