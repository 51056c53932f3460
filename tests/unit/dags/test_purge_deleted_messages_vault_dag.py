"""The vault purge DAG: monthly on the 1st, health gate -> Spark job -> report, params validated, job options."""

from __future__ import annotations

import pytest

from tests.support.dag_files import dag_module

DAG_ID = "purge_deleted_messages_vault"


def test_not_scheduled_as_shipped_and_says_so(dag):
    assert dag.catchup is False
    assert type(dag.timetable).__name__ == "NullTimetable"
    assert "not scheduled (MAILPLATFORM_SCHEDULE__PURGE_DELETED_MESSAGES_VAULT=on" in dag.description
    assert "nothing is purged unless triggered by hand" in dag.description


def test_once_enabled_runs_on_the_first_of_the_month_and_says_it_deletes(monkeypatch):
    """The guide: purge on the 1st of each month."""

    monkeypatch.setenv("MAILPLATFORM_SCHEDULE__PURGE_DELETED_MESSAGES_VAULT", "on")
    enabled = dag_module(DAG_ID).dag
    assert enabled.timetable.summary == "0 3 1 * *"   # 03:00 UTC on day 1 of every month
    assert "DELETES for real (dry_run off) the months that ended before now - 1y" in enabled.description


def test_gate_then_spark_job_then_report_in_the_cassandra_pool(dag):
    gate, spark, report = dag.get_task("backends_healthy"), dag.get_task("detect_repair_verify"), dag.get_task("report")
    assert gate.downstream_task_ids == {spark.task_id} and spark.downstream_task_ids == {report.task_id}
    assert set(gate.components) == {"Cassandra backend", "ObjectStorage"}
    assert spark.job == DAG_ID and spark.pool == "cassandra_maintenance"


def test_params_become_job_options(module):
    assert module.job_args({"retention": "1y", "beginning_of_retention": None, "bucket_prefix": ""}) == \
        ["--retention", "1y"]
    assert module.job_args({"retention": "30", "beginning_of_retention": "2025-06-01T00:00:00Z",
                            "bucket_prefix": "prod-"}) == \
        ["--retention", "30", "--beginning-of-retention", "2025-06-01T00:00:00Z", "--bucket-prefix", "prod-"]


@pytest.mark.parametrize(("name", "good", "bad"), [
    ("retention", ["1y", "365d", "30", "52 weeks"], ["-1y", "one year", "1 fortnight", ""]),
    ("beginning_of_retention", [None, "2025-06-01T00:00:00Z", "2025-06-01T00:00:00.5+02:00"],
     ["2025-06-01", "2025-06-01T00:00:00", "yesterday"]),
    ("bucket_prefix", ["", "prod-"], ["UPPER", "under_score"]),
])
def test_params_are_validated(dag, name, good, bad):
    from airflow.sdk import Param
    from airflow.sdk.exceptions import ParamValidationError

    schema = dag.params.get_param(name).schema
    for value in good:
        assert Param(value, **schema).resolve() == value
    for value in bad:
        with pytest.raises(ParamValidationError):
            Param(value, **schema).resolve()
