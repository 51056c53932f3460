"""Maintenance mode as Airflow setup/teardown tasks, so traffic resumes even when the repair fails.

    enable = EnableMaintenanceOperator(task_id="enable_maintenance", reason="reindex")
    disable = DisableMaintenanceOperator(task_id="disable_maintenance")
    enable >> repair >> disable.as_teardown(setups=enable)

A teardown only runs when its setup succeeded, so the enable operator itself switches
maintenance back off when it fails after it may have switched it on (unless it was already on
before: then somebody else owns that window). Both check the state the server reports back.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException

from mailplatform.hooks.webadmin import DEFAULT_CONN_ID, WebAdminHook


class EnableMaintenanceOperator(BaseOperator):
    """``PUT /maintenance``; returns (XCom) the state the server reports once it is on."""

    template_fields = ("reason",)
    ui_color = "#ffe0b2"

    def __init__(self, *, reason: str | None = None, webadmin_conn_id: str = DEFAULT_CONN_ID,
                 request_timeout: float = 30.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reason = reason
        self.webadmin_conn_id = webadmin_conn_id
        self.request_timeout = request_timeout

    def execute(self, context: Any) -> dict[str, Any]:
        reason = self.reason or _default_reason(context)
        with WebAdminHook(self.webadmin_conn_id, timeout=self.request_timeout) as hook:
            already_on = bool(hook.maintenance_state().get("enabled"))
            try:
                hook.enable_maintenance(reason)
                state = hook.maintenance_state()
                if not state.get("enabled"):
                    raise AirflowException(f"maintenance mode still off after PUT /maintenance: {state}")
            except Exception:
                if not already_on:
                    _best_effort_off(hook, self.log)
                raise
        self.log.info("maintenance mode on since %s: %s", state.get("since"), state.get("reason"))
        return state


class DisableMaintenanceOperator(BaseOperator):
    """``DELETE /maintenance`` then checks it is off; already off is fine. Returns the final state."""

    ui_color = "#c8e6c9"

    def __init__(self, *, webadmin_conn_id: str = DEFAULT_CONN_ID, request_timeout: float = 30.0,
                 **kwargs: Any) -> None:
        # Resuming traffic matters more than most tasks: retry a blip rather than leave mail refused.
        kwargs.setdefault("retries", 3)
        kwargs.setdefault("retry_delay", timedelta(seconds=30))
        super().__init__(**kwargs)
        self.webadmin_conn_id = webadmin_conn_id
        self.request_timeout = request_timeout

    def execute(self, context: Any) -> dict[str, Any]:
        with WebAdminHook(self.webadmin_conn_id, timeout=self.request_timeout) as hook:
            hook.disable_maintenance()   # the server answers 200 when it was already off
            state = hook.maintenance_state()   # read back from the store, not the DELETE's echo
        if state.get("enabled"):
            raise AirflowException(f"maintenance mode still on after DELETE /maintenance: {state}")
        self.log.info("maintenance mode off (%s)", state.get("since"))
        return state


def _default_reason(context: Any) -> str:
    ti = context.get("ti") if hasattr(context, "get") else None
    if ti is None:
        return "Airflow maintenance"
    return f"Airflow {ti.dag_id} run {ti.run_id}"


def _best_effort_off(hook: WebAdminHook, log: Any) -> None:
    try:
        hook.disable_maintenance()
    except Exception:   # the original failure is the one to report
        log.exception("could not switch maintenance mode back off after a failed enable")
