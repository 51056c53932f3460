"""The mailbox repair DAG's shape: maintenance mode held by the Spark job, a teardown; params validated."""

from __future__ import annotations

import os

import pytest

DAG_ID = "solve_mailbox_inconsistencies"


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert not bag.import_errors
    return bag.get_dag(DAG_ID)


def test_the_spark_job_holds_maintenance_mode_inside_its_slot_and_a_teardown_switches_it_off(dag):
    setup, teardown = dag.get_task("maintenance_window"), dag.get_task("disable_maintenance")
    spark, report = dag.get_task("detect_repair_verify"), dag.get_task("report")
    assert setup.is_setup and teardown.is_teardown
    assert setup.task_id in teardown.upstream_task_ids        # a teardown runs once its setup ran
    assert spark.upstream_task_ids == {setup.task_id} and report.task_id in teardown.upstream_task_ids
    assert dag.get_task("backends_healthy").downstream_task_ids == {setup.task_id}
    # Maintenance goes on in the Spark task itself, which runs in the Cassandra pool: queueing for the
    # slot is not part of the outage. The job cannot outlive the window the server enforces.
    assert spark.pool == "cassandra_maintenance" and setup.pool != spark.pool
    assert spark.maintenance_window is not None and teardown.window == spark.maintenance_window
    assert spark.execution_timeout == spark.maintenance_window.max_duration


def test_max_iterations_becomes_the_job_option_and_is_validated(dag):
    import importlib.util

    from mailplatform.param_checks import refusal

    path = os.path.join(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], f"{DAG_ID}.py")
    spec = importlib.util.spec_from_file_location(f"{DAG_ID}_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.job_args({"max_iterations": 3}) == ["--max-iterations", "3"]
    for bad in (0, -1, "two"):
        assert "max_iterations" in (refusal(dag, {"max_iterations": bad}) or "")
    assert refusal(dag, {"max_iterations": 2}) is None
