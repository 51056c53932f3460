"""The vault restore DAG: params checked first (the vault's query parser), health gate -> Spark job -> report."""

from __future__ import annotations

import json

import pytest

DAG_ID = "restore_deleted_messages"
QUERY = {"combinator": "and", "criteria": [{"fieldName": "subject", "operator": "contains", "value": "invoice"}]}


def test_params_checked_then_gate_then_spark_job_then_report(dag):
    check, gate = dag.get_task("check_params"), dag.get_task("backends_healthy")
    spark, report = dag.get_task("restore"), dag.get_task("report")
    assert check.upstream_task_ids == set()
    assert check.downstream_task_ids == {gate.task_id} and gate.downstream_task_ids == {spark.task_id}
    assert spark.downstream_task_ids == {report.task_id}
    assert set(gate.components) == {"Cassandra backend", "ObjectStorage"}   # the purge DAG's gate
    assert spark.job == DAG_ID and spark.pool == "cassandra_maintenance"
    assert type(dag.timetable).__name__ == "NullTimetable"   # on demand only
    assert report.trigger_rule == "all_done"   # runs (and fails, saying why) when the job never ran


def test_the_job_ships_the_server_and_gets_the_broker(dag):
    from mailplatform.mail_queues import MailQueueSparkJob

    assert isinstance(dag.get_task("restore"), MailQueueSparkJob)


def test_a_bad_user_or_query_fails_check_params(module):
    module.validate_params({"user": "alice@example.com", "query": QUERY})
    module.validate_params({"user": "alice", "query": {"criteria": []}})
    for params in ({"user": None, "query": QUERY}, {"user": "alice@example.com", "query": None},
                   {"user": "a b@example.com", "query": QUERY},
                   {"user": "alice@example.com", "query": {"fieldName": "subject", "operator": "after", "value": "x"}},
                   {"user": "alice@example.com", "query": {"combinator": "or", "criteria": []}},
                   {"user": "alice@example.com", "query": {"criteria": [], "limit": -1}}):
        with pytest.raises(ValueError):
            module.validate_params(params)


def test_check_params_fails_the_run_without_retry_on_a_bad_query(dag):

    from mailplatform.param_checks import refusal

    assert dag.get_task("check_params").upstream_task_ids == set()
    assert refusal(dag, {"user": "alice@example.com", "query": QUERY}) is None
    refused = refusal(dag, {"user": "alice@example.com", "query": {"fieldName": "colour", "operator": "equals",
                                                                    "value": "red"}})
    assert refused.startswith("param query:") and "fieldName" in refused


def test_params_become_job_options(module):
    args = module.job_args({"user": "alice@example.com", "query": QUERY, "restore_location": None,
                            "bucket_prefix": "", "blob_bucket": None})
    assert args[:3] == ["--user", "alice@example.com", "--query"] and json.loads(args[3]) == QUERY
    assert len(args) == 4
    assert module.job_args({"user": "a", "query": {"criteria": []}, "restore_location": "Vault",
                            "bucket_prefix": "prod-", "blob_bucket": "mails"})[4:] == \
        ["--restore-location", "Vault", "--bucket-prefix", "prod-", "--blob-bucket", "mails"]


@pytest.mark.parametrize(("name", "good", "bad"), [
    ("user", ["alice@example.com", "alice"], [None, "a b@example.com", "a/b", 42]),
    ("query", [QUERY, {"criteria": []}], [None, "subject contains invoice", [QUERY]]),
    ("restore_location", [None, "Restored-Messages"], [""]),
    ("rate", [None, 50], [0, -1]),
    ("dry_run", [True, False], ["yes"]),
])
def test_params_are_validated(dag, name, good, bad):
    from mailplatform.param_checks import refusal

    valid = {"user": "alice@example.com", "query": QUERY}
    for value in good:
        assert refusal(dag, {**valid, name: value}) is None
    for value in bad:
        assert name in (refusal(dag, {**valid, name: value}) or "")
