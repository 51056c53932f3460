"""Maintenance window held by the repair task: on around the job only, never for a dry run, with a
deadline; switched off by the task and by the teardown, and only the run's own window."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from mailplatform.operators.maintenance_window import (
    LeaveMaintenanceOperator,
    MaintenanceWindow,
    MaintenanceWindowOperator,
)
from mailplatform.operators.spark_job import SparkJobOperator

from mailserver.maintenance.api import MaintenanceState
from mailserver.maintenance.memory import MemoryMaintenanceStore

WINDOW = MaintenanceWindow(timedelta(minutes=30))
LOG = logging.getLogger(__name__)


class RecordingStore(MemoryMaintenanceStore):
    """Counts the writes: a dry run must make none."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[MaintenanceState] = []

    def put(self, state: MaintenanceState) -> None:
        self.writes.append(state)
        super().put(state)


def context(dry_run: bool = False, run_id: str = "manual__1") -> dict[str, Any]:
    return {"dag": SimpleNamespace(dag_id="repair_things"), "run_id": run_id, "params": {"dry_run": dry_run}}


def parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


@pytest.fixture
def store(serve, webadmin_context_with) -> RecordingStore:
    recording = RecordingStore()
    serve(webadmin_context_with(recording))
    return recording


@pytest.fixture
def webadmin_context_with():
    import dataclasses

    from tests.unit.webadmin.webadmin_support import make_context

    return lambda store: dataclasses.replace(make_context(), maintenance=store, guard=None)


def test_on_with_a_deadline_around_the_block_and_off_after(store):
    with WINDOW.held(context(), LOG) as on:
        assert store.get().enabled is True
        assert on["reason"] == "Airflow repair_things run manual__1"
        assert parse(on["expiresAt"]) - parse(on["since"]) == timedelta(minutes=30)
    assert store.get().enabled is False


def test_off_after_the_block_also_when_it_raises(store):
    log = LOG
    with pytest.raises(RuntimeError, match="job failed"), WINDOW.held(context(), log):
        raise RuntimeError("job failed")
    assert store.get().enabled is False


def test_a_dry_run_writes_no_maintenance_state_at_all(store):
    log = LOG
    dry = context(dry_run=True)
    MaintenanceWindowOperator(task_id="maintenance_window", window=WINDOW).execute(dry)
    with WINDOW.held(dry, log):
        assert store.get().enabled is False
    LeaveMaintenanceOperator(task_id="disable_maintenance", window=WINDOW).execute(dry)
    assert store.writes == []


def test_somebody_elses_window_is_neither_taken_over_nor_switched_off(store):
    log = LOG
    theirs = store.enable("Cassandra upgrade", "ops")
    with WINDOW.held(context(), log) as state:
        assert state["reason"] == "Cassandra upgrade"
    LeaveMaintenanceOperator(task_id="disable_maintenance", window=WINDOW).execute(context())
    assert store.get() == theirs


def test_the_teardown_switches_off_the_window_a_killed_task_left(store):
    WINDOW.enter(context(run_id="run-a"), LOG)
    assert LeaveMaintenanceOperator(task_id="t", window=WINDOW).execute(context(run_id="other"))["enabled"] is True
    assert LeaveMaintenanceOperator(task_id="t", window=WINDOW).execute(context(run_id="run-a"))["enabled"] is False
    writes = len(store.writes)
    LeaveMaintenanceOperator(task_id="t", window=WINDOW).execute(context(run_id="run-a"))   # already off
    assert len(store.writes) == writes


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_spark_task_holds_maintenance_only_while_its_job_runs(store, monkeypatch, dry_run):
    monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", json.dumps({"conn_type": "generic", "host": "h"}))
    seen: list[bool] = []
    monkeypatch.setattr("airflow.providers.apache.spark.operators.spark_submit.SparkSubmitOperator.execute",
                        lambda self, ctx: seen.append(store.get().enabled))
    op = SparkJobOperator(task_id="detect_repair_verify", job="stack_smoke", s3_conn_id=None,
                          opensearch_conn_id=None, maintenance_window=WINDOW)
    op.execute(context(dry_run=dry_run))
    assert seen == [not dry_run]
    assert store.get().enabled is False
    if dry_run:
        assert store.writes == []
