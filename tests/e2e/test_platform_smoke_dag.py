"""Airflow runs the smoke DAG with dag.test(): seed -> SparkSubmitOperator -> verification."""

from __future__ import annotations

import pytest

from tests.support.clients import cassandra_cluster

pytestmark = [pytest.mark.e2e, pytest.mark.spark]


def load_dag(dag_id: str):
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow < 3.3
        from airflow.models.dagbag import DagBag
    import os

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert bag.import_errors == {}
    return bag.get_dag(dag_id)


def test_smoke_dag_runs_spark_job_and_verifies_result(stack, spark_env, airflow_db, unique):
    keyspace = f"dag_smoke_{unique}"
    dag = load_dag("platform_smoke")
    try:
        run = dag.test(run_conf={"keyspace": keyspace, "users": 4, "messages_per_user": 3})

        states = {ti.task_id: ti.state for ti in run.get_task_instances()}
        assert states == {"check_params": "success", "seed": "success", "spark_totals": "success", "verify": "success"}
        assert run.state == "success"
        # Independent check of what Spark wrote (the DAG's own verify task could be wrong too).
        cluster = cassandra_cluster(stack)
        try:
            rows = list(cluster.connect().execute(f"SELECT user, message_count FROM {keyspace}.smoke_totals"))
        finally:
            cluster.shutdown()
        assert sorted((r.user, r.message_count) for r in rows) == [(f"user{i}@smoke.test", 3) for i in range(4)]
    finally:
        cluster = cassandra_cluster(stack)
        cluster.connect().execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        cluster.shutdown()


def test_smoke_dag_rejects_invalid_keyspace_param(airflow_db):
    from airflow.sdk.exceptions import ParamValidationError

    dag = load_dag("platform_smoke")
    with pytest.raises(ParamValidationError, match="Invalid input for param keyspace: 'Bad-Name; DROP' does not match"):
        dag.test(run_conf={"keyspace": "Bad-Name; DROP"})
