"""The schema migration DAG's shape: monthly intervals for backfills, one task per transition in order,
the heavy steps in the Cassandra pool, the slice job given its data interval."""

from __future__ import annotations

import itertools
import os
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from mailserver.cassandra.versions import LATEST

DAG_ID = "cassandra_schema_migration"
TRANSITIONS = [f"to_{v}" for v in range(11, LATEST + 1)]


@pytest.fixture(scope="module")
def dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert DAG_ID not in {os.path.basename(f).removesuffix(".py") for f in bag.import_errors}
    return bag.get_dag(DAG_ID)


def test_monthly_intervals_so_a_backfill_makes_one_run_per_month(dag):
    from airflow.serialization.encoders import coerce_to_core_timetable
    from airflow.timetables.interval import CronDataIntervalTimetable

    timetable = coerce_to_core_timetable(dag.timetable)   # what the scheduler and backfills use
    assert isinstance(timetable, CronDataIntervalTimetable) and timetable.periodic
    january = timetable.infer_manual_data_interval(run_after=datetime(2023, 2, 1, tzinfo=UTC))
    assert (january.start, january.end) == (datetime(2023, 1, 1, tzinfo=UTC), datetime(2023, 2, 1, tzinfo=UTC))
    assert dag.catchup is False and dag.max_active_runs == 1


def test_transitions_run_one_after_the_other_after_the_full_range_job(dag):
    assert dag.get_task("plan").upstream_task_ids == {"backends_healthy"}
    assert dag.get_task("to_11").upstream_task_ids == {"denormalize_all"}
    assert dag.get_task("denormalize_all").upstream_task_ids == {"denormalization_needed"}
    assert dag.get_task("migrate_slice").upstream_task_ids == {"slice_needed"}
    for before, after in itertools.pairwise(TRANSITIONS):
        assert dag.get_task(after).upstream_task_ids == {before}
    for task_id in TRANSITIONS:   # a skipped step (already reached, beyond the target) does not stop the chain
        assert dag.get_task(task_id).trigger_rule == "none_failed"
    assert dag.get_task("summary").upstream_task_ids == {TRANSITIONS[-1], "slice_report"}
    assert dag.get_task("backends_healthy").components == ["Cassandra backend"]
    for task_id in ("migrate_slice", "denormalize_all", *TRANSITIONS):
        assert dag.get_task(task_id).pool == "cassandra_maintenance"


def test_the_slice_job_gets_its_range_and_its_own_run_key(dag, module):
    plan = {"internal_date_from": datetime(2023, 1, 1, tzinfo=UTC).isoformat(),
            "internal_date_to": datetime(2023, 2, 1, tzinfo=UTC).isoformat()}
    context = {"params": {"slices": 4, "rate": 50.0, "dry_run": False}, "dag": dag, "run_id": "backfill__2023",
               "dag_run": SimpleNamespace(triggering_user_name="ops"),
               "ti": SimpleNamespace(xcom_pull=lambda task_ids: plan)}
    args = module.spark_args("slice")(context)
    assert args[args.index("--run-key") + 1] == f"{DAG_ID}/backfill__2023/slice"
    assert args[args.index("--from") + 1] == "2023-01-01T00:00:00+00:00"
    assert args[args.index("--to") + 1] == "2023-02-01T00:00:00+00:00"
    assert args[args.index("--rate") + 1] == "50.0" and args[args.index("--triggered-by") + 1] == "ops"

    full = module.spark_args("all")({**context, "params": {"slices": 4, "rate": None, "dry_run": True}})
    assert "--from" not in full and "--rate" not in full and "--dry-run" in full
    assert full[full.index("--run-key") + 1] == f"{DAG_ID}/backfill__2023/all"


def test_params_are_validated(dag):

    from mailplatform.param_checks import refusal

    for name, bad in (("mode", "all"), ("target_version", 16), ("target_version", 9), ("internal_date_from", 3)):
        assert name in (refusal(dag, {name: bad}) or "")
    assert refusal(dag, {"target_version": 13}) is None
    assert "internal_date_to" in refusal(dag, {"internal_date_from": "2024-02-01T00:00:00+00:00",
                                               "internal_date_to": "2024-01-01T00:00:00+00:00"})


def test_the_keyspace_to_migrate_is_a_connection_chosen_per_run(dag):
    from airflow.sdk import Param
    from airflow.sdk.exceptions import ParamValidationError

    schema = dag.params.get_param("cassandra_conn_id").schema
    assert Param("cassandra_default", **schema).resolve() == "cassandra_default"
    for bad in ("", "conn id with spaces", "x" * 251, "a;drop"):
        with pytest.raises(ParamValidationError, match="does not match"):
            Param(bad, **schema).resolve()
    for task_id in ("migrate_slice", "denormalize_all"):
        task = dag.get_task(task_id)
        assert "cassandra_conn_id" in task.template_fields
        assert task.render_template(task.cassandra_conn_id, {"params": {"cassandra_conn_id": "staging"}}) == "staging"
