"""Maintenance mode operators: round trip, idempotent disable, read-back checks, setup/teardown wiring."""

from __future__ import annotations

import dataclasses
import datetime

import pytest
from airflow.sdk import DAG
from airflow.sdk.exceptions import AirflowException
from airflow.utils.trigger_rule import TriggerRule
from mailplatform.hooks.webadmin import WebAdminApiError
from mailplatform.operators.maintenance import DisableMaintenanceOperator, EnableMaintenanceOperator

from mailserver.maintenance.api import MaintenanceState
from mailserver.maintenance.memory import MemoryMaintenanceStore
from mailserver.webadmin.context import WebAdminContext
from tests.unit.webadmin.webadmin_support import make_context


class StuckOnStore(MemoryMaintenanceStore):
    """A store that loses every "off": the DELETE answers 200 yet maintenance stays on."""

    def put(self, state: MaintenanceState) -> None:
        if state.enabled:
            super().put(state)


class FailingEnableStore(MemoryMaintenanceStore):
    """Stores "on" and then fails, as when the answer is lost after the write landed."""

    def enable(self, reason: str | None, updated_by: str | None) -> MaintenanceState:
        super().enable(reason, updated_by)
        raise ConnectionError("write timed out")


def context_with(store: MemoryMaintenanceStore) -> WebAdminContext:
    # guard=None: __post_init__ builds the guard over the new store.
    return dataclasses.replace(make_context(), maintenance=store, guard=None)


def enable(**kwargs) -> EnableMaintenanceOperator:
    return EnableMaintenanceOperator(task_id="enable_maintenance", **kwargs)


def disable() -> DisableMaintenanceOperator:
    return DisableMaintenanceOperator(task_id="disable_maintenance")


def test_enable_then_disable(webadmin):
    on = enable(reason="reindex mailbox").execute({})
    assert (on["enabled"], on["reason"], on["updatedBy"]) == (True, "reindex mailbox", "admin")
    assert webadmin.ctx.maintenance.get().enabled is True
    off = disable().execute({})
    assert off["enabled"] is False
    assert webadmin.ctx.maintenance.get().enabled is False


def test_disable_is_idempotent(webadmin):
    assert disable().execute({})["enabled"] is False
    assert disable().execute({})["enabled"] is False
    assert webadmin.ctx.maintenance.get().enabled is False


def test_disable_checks_the_state_after_the_delete(serve):
    server = serve(context_with(StuckOnStore()))
    server.ctx.maintenance.enable("upgrade", "ops")
    with pytest.raises(AirflowException, match="still on after DELETE"):
        disable().execute({})


def test_failed_enable_switches_maintenance_back_off(serve):
    server = serve(context_with(FailingEnableStore()))
    with pytest.raises(WebAdminApiError) as caught:
        enable(reason="repair").execute({})
    assert caught.value.status_code == 500
    # No teardown runs after a failed setup: the operator itself must not leave mail refused.
    assert server.ctx.maintenance.get().enabled is False


def test_failed_enable_keeps_a_window_somebody_else_opened(serve):
    server = serve(context_with(FailingEnableStore()))
    MemoryMaintenanceStore.enable(server.ctx.maintenance, "operator's own window", "ops")
    with pytest.raises(WebAdminApiError):
        enable(reason="repair").execute({})
    assert server.ctx.maintenance.get().enabled is True


def test_default_reason_names_the_dag_run(webadmin):
    class TI:
        dag_id, run_id = "repair_mailboxes", "manual__2026-01-01"

    state = enable().execute({"ti": TI()})
    assert state["reason"] == "Airflow repair_mailboxes run manual__2026-01-01"


def test_setup_teardown_wiring():
    with DAG("maintenance_window", schedule=None, start_date=datetime.datetime(2026, 1, 1)):
        on, off = enable(), disable()
        repair = EnableMaintenanceOperator(task_id="repair")   # any task stands for the repair here
        on >> repair >> off.as_teardown(setups=on)
    assert on.is_setup and off.is_teardown
    assert off.trigger_rule == TriggerRule.ALL_DONE_SETUP_SUCCESS   # runs even when the repair failed
    assert on.task_id in off.upstream_task_ids and repair.task_id in off.upstream_task_ids
    assert off.retries == 3   # resuming traffic is retried by default
