"""Wait until WebAdmin's ``/healthcheck`` (all components, or a selection) is healthy.

Notes for DAG authors: maintenance mode makes the ``MaintenanceMode`` component *degraded*, so
a health sensor that runs inside a maintenance window needs ``accept_degraded=True`` or a
``components`` selection without it. An unreachable server counts as "not healthy yet" (it may
be restarting); an unknown component name fails at once (waiting cannot fix a typo).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx
from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, AirflowSkipException

from mailplatform.hooks.webadmin import DEFAULT_CONN_ID, WebAdminHook, describe, failing_components
from mailplatform.triggers.health import WebAdminHealthTrigger

# The trigger reports its own timeout with the failing components; Airflow's deferral timeout
# only backs it up, so it fires a little later.
DEFERRAL_GRACE = timedelta(minutes=2)


class WebAdminHealthSensor(BaseSensorOperator):
    template_fields: Sequence[str] = ("components",)
    ui_color = "#c8e6c9"

    def __init__(self, *, webadmin_conn_id: str = DEFAULT_CONN_ID, components: Sequence[str] | None = None,
                 accept_degraded: bool = False, deferrable: bool = False, request_timeout: float = 10.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.webadmin_conn_id = webadmin_conn_id
        self.components = list(components) if components else None
        self.accept_degraded = accept_degraded
        self.deferrable = deferrable
        self.request_timeout = request_timeout
        self._last_problem = "no health check answered yet"

    @property
    def last_problem(self) -> str:
        """Why the last poke was not healthy, or could not ask: what a timeout reports."""
        return self._last_problem

    def poke(self, context: Any) -> bool:
        with WebAdminHook(self.webadmin_conn_id, timeout=self.request_timeout,
                          connect_timeout=self.request_timeout) as hook:
            try:
                body = hook.health(checks=self.components)
            except httpx.TransportError as exc:
                self._last_problem = f"WebAdmin unreachable: {type(exc).__name__}: {exc}"
                self.log.info("%s", self._last_problem)
                return False
        failing = failing_components(body, self.accept_degraded)
        if failing:
            self._last_problem = describe(failing)
            self.log.info("WebAdmin not healthy yet: %s", self._last_problem)
            return False
        return True

    def execute(self, context: Any) -> None:
        # One synchronous look first: when all is well there is no point in a triggerer round trip.
        if self.deferrable:
            if not self.poke(context):
                self.defer(trigger=WebAdminHealthTrigger(
                    webadmin_conn_id=self.webadmin_conn_id, components=self.components,
                    accept_degraded=self.accept_degraded, poll_interval=self.poke_interval,
                    deadline=time.time() + self.timeout, request_timeout=self.request_timeout),
                    method_name="execute_complete", timeout=timedelta(seconds=self.timeout) + DEFERRAL_GRACE)
            return
        try:
            super().execute(context)
        except AirflowSensorTimeout as exc:
            raise AirflowSensorTimeout(f"{exc} WebAdmin still not healthy: {self._last_problem}") from exc
        except AirflowSkipException as exc:   # soft_fail turns the timeout into a skip: keep the reason
            raise AirflowSkipException(f"{exc} WebAdmin still not healthy: {self._last_problem}") from exc

    def execute_complete(self, context: Any, event: dict[str, Any]) -> None:
        status, message = event.get("status"), event.get("message", "")
        if status == "healthy":
            self.log.info("WebAdmin healthy")
            return
        if status == "timeout":
            raise AirflowSensorTimeout(f"Sensor has timed out after {self.timeout}s; "
                                       f"WebAdmin still not healthy: {message}")
        raise AirflowException(f"WebAdmin health check failed: {message}")
