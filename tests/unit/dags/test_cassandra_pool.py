"""Mutual exclusion: every task of every DAG that scans or writes Cassandra takes the one slot of the
``cassandra_maintenance`` pool, so two procedures never run against the keyspace at once.

A task touches Cassandra when it is a Spark job (every job of the platform reads its tables through
the connector) or a Python task that opens a Cassandra session. The few Python tasks that only read
one small row (the schema version, the smoke totals) are listed with the reason they may run beside
a procedure, and must contain no write statement.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from typing import Any

import pytest

from include.stack.services.airflow import POOLS_FILE

POOL = "cassandra_maintenance"
OPENS_A_SESSION = re.compile(r"\b(cassandra_session|CassandraHook|CassandraSession)\b")
CQL_WRITE = re.compile(r"\b(INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|TRUNCATE|CREATE|ALTER|DROP)\b"
                       r"|\b(run_transition|bump_to_denormalized|migrate)\(", re.IGNORECASE)
READ_ONLY = {
    ("cassandra_schema_migration", "plan"): "reads the schema version to plan the run",
    ("cassandra_schema_migration", "summary"): "reads the schema version the run reached",
    ("platform_smoke", "verify"): "reads back the totals of the smoke keyspace",
}


@pytest.fixture(scope="module")
def dagbag() -> Any:
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow < 3.3
        from airflow.models.dagbag import DagBag
    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert bag.import_errors == {}
    return bag


def operator_class(task: Any) -> type:
    return getattr(task, "operator_class", None) or type(task)   # a mapped task names the class it expands


def python_source(task: Any) -> str | None:
    callable_ = getattr(task, "python_callable", None)
    return inspect.getsource(callable_) if callable_ is not None else None


def touches_cassandra(task: Any) -> bool:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    cls = operator_class(task)
    if isinstance(cls, type) and issubclass(cls, SparkSubmitOperator):
        return True
    source = python_source(task)
    return source is not None and bool(OPENS_A_SESSION.search(source))


def test_the_pool_file_defines_the_cassandra_pool_with_one_slot():
    pools = json.loads(POOLS_FILE.read_text())
    assert pools[POOL]["slots"] == 1


def test_every_task_that_scans_or_writes_cassandra_takes_the_cassandra_pool(dagbag):
    touching = [(dag_id, task) for dag_id, dag in sorted(dagbag.dags.items()) for task in dag.tasks
                if touches_cassandra(task)]
    assert {dag_id for dag_id, _ in touching} >= {"cassandra_schema_migration", "detect_cassandra_inconsistencies",
                                                  "solve_message_inconsistencies"}, "the detection found nothing"
    outside = [f"{dag_id}.{task.task_id} (pool {task.pool})" for dag_id, task in touching
               if (dag_id, task.task_id) not in READ_ONLY and task.pool != POOL]
    assert outside == [], "tasks that scan or write Cassandra outside the one-slot pool"


def test_the_read_only_exceptions_exist_and_write_nothing(dagbag):
    for (dag_id, task_id), why in READ_ONLY.items():
        dag = dagbag.get_dag(dag_id)
        assert dag is not None and dag.has_task(task_id), f"{dag_id}.{task_id} ({why}) no longer exists"
        task = dag.get_task(task_id)
        assert touches_cassandra(task), f"{dag_id}.{task_id} no longer opens a Cassandra session: drop it"
        write = CQL_WRITE.search(python_source(task) or "")
        assert write is None, f"{dag_id}.{task_id} is listed read-only ({why}) but writes: {write.group(0)!r}"
