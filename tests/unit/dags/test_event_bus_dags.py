"""The two event-bus DAGs: found by the integrity test's DagBag, their anatomy, params and job arguments."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.support.dag_files import dag_module

REDELIVER, RECONCILE = "redeliver_event_dead_letters", "reconcile_event_bus_groups"
GROUP = "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater$ListeningCurrentQuotaUpdaterGroup"
INSERTION_ID = "6f1e2d3c-0a1b-11ef-9f1a-0242ac120002"


def test_the_integrity_test_picks_both_dags_up(dagbag):
    # test_dag_integrity.py checks every DAG of this same DagBag (docs, tags, params, retries, one run).
    assert {REDELIVER, RECONCILE} <= set(dagbag.dags)
    for dag_id in (REDELIVER, RECONCILE):
        assert Path(dagbag.get_dag(dag_id).fileloc).name == f"{dag_id}.py"


def test_redelivery_anatomy_gates_before_and_after(dagbag):
    dag = dagbag.get_dag(REDELIVER)
    order = ["check_params", "backends_healthy", "broker_healthy", "detect_redeliver_verify", "report",
             "redelivered", "dead_letters_cleared"]
    for upstream, downstream in itertools.pairwise(order):
        assert dag.get_task(downstream).upstream_task_ids == {upstream}
    assert dag.get_task("detect_redeliver_verify").pool == "cassandra_maintenance"
    assert dag.get_task("backends_healthy").components == ["Cassandra backend", "RabbitMQ backend"]
    assert list(dag.params) == ["dry_run", "scope", "group", "insertion_id", "events_per_second", "slices"]
    assert dag.params["dry_run"] is False and dag.params["scope"] == "all"


def test_redelivery_params_are_validated(dagbag):
    from mailplatform.param_checks import refusal

    dag = dagbag.get_dag(REDELIVER)
    for name, bad in [("scope", "everything"), ("insertion_id", "not-a-uuid"), ("events_per_second", 0),
                      ("events_per_second", "fast"), ("slices", 0), ("dry_run", "yes")]:
        assert name in (refusal(dag, {name: bad}) or "")
    assert "param group: missing: scope='group' needs it" in refusal(dag, {"scope": "group"})
    checks = dag_module(REDELIVER)
    checks.validate_params({"scope": "event", "group": GROUP, "insertion_id": INSERTION_ID})
    with pytest.raises(ValueError, match="needs a group"):
        checks.validate_params({"scope": "group", "group": None, "insertion_id": None})
    with pytest.raises(ValueError, match="neither a group"):
        checks.validate_params({"scope": "all", "group": GROUP, "insertion_id": None})


def test_redelivery_job_arguments():
    job_args = dag_module(REDELIVER).job_args
    assert job_args({"slices": 8, "scope": "all", "dry_run": True}) == ["--slices", "8", "--scope", "all", "--dry-run"]
    assert job_args({"slices": 2, "scope": "event", "group": GROUP, "insertion_id": INSERTION_ID,
                     "events_per_second": 50, "dry_run": False}) == [
        "--slices", "2", "--scope", "event", "--group", GROUP, "--insertion-id", INSERTION_ID, "--rate", "50"]


def test_reconcile_anatomy(dagbag):
    dag = dagbag.get_dag(RECONCILE)
    order = ["backends_healthy", "broker_healthy", "detect", "reconcile", "report", "nothing_left_on_purpose",
             "groups_healthy"]
    for upstream, downstream in itertools.pairwise(order):
        assert dag.get_task(downstream).upstream_task_ids == {upstream}
    assert list(dag.params) == ["dry_run", "move_orphan_messages_to_dead_letters", "messages_per_second"]
    for task_id in ("detect", "reconcile", "report"):     # they read or write Cassandra
        assert dag.get_task(task_id).pool == "cassandra_maintenance"
    assert dag.get_task("report").trigger_rule == "none_failed"     # a dry run skips reconcile, not the report
    assert "RabbitMQEventBusGroups" in dag.get_task("groups_healthy").components
