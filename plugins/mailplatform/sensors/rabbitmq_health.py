"""Wait until the broker of a ``rabbitmq_management`` connection can take work: vhost there, no alarm.

WebAdmin's ``RabbitMQ backend`` check says whether the *mail server* reaches its broker; a
procedure that publishes or consumes itself also needs *its own* connection to be right (the
vhost it names exists) and the broker not to block publishers (a memory or disk alarm stops every
publish until it clears: a redelivery started then would hang). An unreachable management API
counts as "not healthy yet"; a missing vhost fails at once (waiting cannot create it).
"""

from __future__ import annotations

from typing import Any

import httpx
from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout

from mailplatform.hooks.rabbitmq_management import DEFAULT_CONN_ID, RabbitMQManagementHook


class RabbitMQHealthSensor(BaseSensorOperator):
    ui_color = "#c8e6c9"

    def __init__(self, *, rabbitmq_conn_id: str = DEFAULT_CONN_ID, request_timeout: float = 10.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rabbitmq_conn_id = rabbitmq_conn_id
        self.request_timeout = request_timeout
        self._last_problem = "no answer yet"

    @property
    def last_problem(self) -> str:
        """Why the last poke was not healthy, or could not ask: what a timeout reports."""
        return self._last_problem

    def poke(self, context: Any) -> bool:
        with RabbitMQManagementHook(self.rabbitmq_conn_id, timeout=self.request_timeout) as hook:
            try:
                if not hook.vhost_exists():
                    raise AirflowException(f"vhost {hook.vhost!r} does not exist on the broker of "
                                           f"connection {self.rabbitmq_conn_id!r}")
                alarms = hook.alarms()
            except httpx.TransportError as exc:
                self._last_problem = f"management API unreachable: {type(exc).__name__}: {exc}"
                self.log.info("%s", self._last_problem)
                return False
        if alarms:
            self._last_problem = "; ".join(alarms)
            self.log.info("RabbitMQ not healthy yet: %s (publishers are blocked)", self._last_problem)
            return False
        return True

    def execute(self, context: Any) -> None:
        try:
            super().execute(context)
        except AirflowSensorTimeout as exc:
            raise AirflowSensorTimeout(f"{exc} RabbitMQ still not healthy: {self._last_problem}") from exc
