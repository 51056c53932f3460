"""Maintenance mode held by the task that needs it, for no longer than it needs it.

Traffic stops (SMTP ``421``, mailbox writes refused) only while the repair itself runs:

* the repair task switches maintenance on itself, once it runs, that is once it holds its pool
  slot: waiting for the one Cassandra slot behind another procedure is not part of the outage;
* the switch carries a deadline (``max_duration``): the server leaves maintenance by itself when
  it passes, so a killed worker or a lost Airflow cannot keep mail refused;
* the repair task switches it off as soon as its job ends, and a teardown does it again
  whatever happened (failure, a run marked failed, a killed worker) as a backstop;
* a dry run never switches it on: it writes nothing, the maintenance state included.

A window belongs to one DAG run: its reason names the run, and only that run switches it off.
A window somebody else opened (an operator by hand, another procedure) is left as it is.

    window = MaintenanceWindow(timedelta(hours=2))
    setup = MaintenanceWindowOperator(task_id="maintenance_window", window=window)
    repair = SparkJobOperator(..., maintenance_window=window, execution_timeout=window.max_duration)
    leave = LeaveMaintenanceOperator(task_id="disable_maintenance", window=window)
    setup >> repair >> leave.as_teardown(setups=setup)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException

from mailplatform.hooks.webadmin import DEFAULT_CONN_ID, WebAdminHook


def run_reason(context: Mapping[str, Any]) -> str:
    """The reason a run's window carries: it names the run, so the run recognises its own window."""
    return f"Airflow {context['dag'].dag_id} run {context['run_id']}"


def is_dry_run(context: Mapping[str, Any]) -> bool:
    return bool((context.get("params") or {}).get("dry_run"))


@dataclass(frozen=True)
class MaintenanceWindow:
    max_duration: timedelta
    webadmin_conn_id: str = DEFAULT_CONN_ID
    request_timeout: float = 30.0

    def hook(self) -> WebAdminHook:
        return WebAdminHook(self.webadmin_conn_id, timeout=self.request_timeout)

    @contextmanager
    def held(self, context: Mapping[str, Any], log: Any) -> Iterator[dict[str, Any] | None]:
        """Maintenance on around the block (nothing for a dry run); off after it, whatever it raised."""
        if is_dry_run(context):
            log.info("dry run: maintenance mode is not switched on (a dry run writes nothing)")
            yield None
            return
        state = self.enter(context, log)
        try:
            yield state
        finally:
            try:
                self.leave(context, log)
            except Exception:   # the job's own outcome is the one to report; the teardown tries again
                log.exception("could not switch maintenance mode off after the job; the teardown will")

    def enter(self, context: Mapping[str, Any], log: Any) -> dict[str, Any]:
        reason = run_reason(context)
        seconds = max(1, math.ceil(self.max_duration.total_seconds()))
        with self.hook() as hook:
            current = hook.maintenance_state()
            if current.get("enabled") and current.get("reason") != reason:
                log.warning("maintenance mode is already on (%s, since %s): the repair runs inside that window "
                            "and leaves it as it is", current.get("reason"), current.get("since"))
                return current
            try:
                hook.enable_maintenance(reason, max_duration_seconds=seconds)
                state = hook.maintenance_state()   # read back from the store, not the PUT's echo
                if not state.get("enabled"):
                    raise AirflowException(f"maintenance mode still off after PUT /maintenance: {state}")
            except Exception:
                _best_effort_off(hook, log)
                raise
        log.info("maintenance mode on (SMTP answers 421, mailbox writes refused) since %s, until %s at the "
                 "latest: %s", state.get("since"), state.get("expiresAt"), reason)
        return state

    def leave(self, context: Mapping[str, Any], log: Any) -> dict[str, Any]:
        """Switch this run's window off; nothing is written when there is none (dry run, already off,
        somebody else's window)."""
        reason = run_reason(context)
        with self.hook() as hook:
            current = hook.maintenance_state()
            if not current.get("enabled") or current.get("reason") != reason:
                log.info("no maintenance window of this run to switch off (state: %s)", current)
                return current
            hook.disable_maintenance()
            state = hook.maintenance_state()
        if state.get("enabled"):
            raise AirflowException(f"maintenance mode still on after DELETE /maintenance: {state}")
        log.info("maintenance mode off: traffic resumes (%s)", state.get("since"))
        return state


class MaintenanceWindowOperator(BaseOperator):
    """The setup of a window: checks WebAdmin answers and says what the run will do; switches nothing.

    It exists so that the teardown has a setup that succeeded before the repair task started: a
    teardown whose only setup failed does not run, and the repair task may fail after it switched
    maintenance on. Returns (XCom) the state before the run.
    """

    ui_color = "#ffe0b2"

    def __init__(self, *, window: MaintenanceWindow, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.window = window

    def execute(self, context: Any) -> dict[str, Any]:
        with self.window.hook() as hook:
            state = hook.maintenance_state()
        if is_dry_run(context):
            self.log.info("dry run: maintenance mode will not be switched on (now: %s)", state)
        else:
            self.log.info("maintenance mode will be switched on by the repair once it holds its Cassandra slot, "
                          "for %s at most (now: %s)", self.window.max_duration, state)
        return state


class LeaveMaintenanceOperator(BaseOperator):
    """The teardown of a window: switches this run's window off if it is still on. Returns the final state."""

    ui_color = "#c8e6c9"

    def __init__(self, *, window: MaintenanceWindow, **kwargs: Any) -> None:
        # Resuming traffic matters more than most tasks: retry a blip rather than leave mail refused.
        kwargs.setdefault("retries", 3)
        kwargs.setdefault("retry_delay", timedelta(seconds=30))
        super().__init__(**kwargs)
        self.window = window

    def execute(self, context: Any) -> dict[str, Any]:
        return self.window.leave(context, self.log)


def _best_effort_off(hook: WebAdminHook, log: Any) -> None:
    try:
        hook.disable_maintenance()
    except Exception:   # the original failure is the one to report
        log.exception("could not switch maintenance mode back off after a failed enable")
