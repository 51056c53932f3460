"""Wait until a RabbitMQ queue holds at most ``max_messages`` messages (a "queue drained" gate).

Generic over the queue name: a mail queue (``JamesMailQueue-workqueue-spool``), an event-bus
group queue (``mailboxEvent-workQueue-<group>``), anything in the vhost of the connection. The
depth is read through the management API (``RabbitMQManagementHook``), so it lags the broker by
up to its statistics interval (5 s by default): a gate, not a counter.

* ``include_unacknowledged`` (default true): messages delivered to a consumer but not yet
  acknowledged still count, since they are not done;
* a queue that does not exist fails at once (a typo cannot be fixed by waiting) unless
  ``missing_ok``, when it counts as drained;
* an unreachable management API is "not drained yet" (the broker may be restarting), until the
  sensor's timeout, which names the last depth seen.

Use ``mode="reschedule"`` for long waits so the worker slot is released between pokes. The queue is
``queue_name``: ``queue`` is Airflow's own operator argument (the executor queue a task runs on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, AirflowSkipException

from mailplatform.hooks.rabbitmq_management import DEFAULT_CONN_ID, RabbitMQManagementHook


def drained(depth: int | None, max_messages: int, *, missing_ok: bool = False) -> bool:
    """Pure: whether a queue of ``depth`` messages (None = the queue does not exist) passes the gate."""
    if depth is None:
        return missing_ok
    return depth <= max_messages


class QueueDepthSensor(BaseSensorOperator):
    template_fields: Sequence[str] = ("queue_name", "max_messages")
    ui_color = "#e1bee7"

    def __init__(self, *, queue_name: str, max_messages: int | str = 0, rabbitmq_conn_id: str = DEFAULT_CONN_ID,
                 include_unacknowledged: bool = True, missing_ok: bool = False, request_timeout: float = 10.0,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.queue_name = queue_name
        self.max_messages = max_messages
        self.rabbitmq_conn_id = rabbitmq_conn_id
        self.include_unacknowledged = include_unacknowledged
        self.missing_ok = missing_ok
        self.request_timeout = request_timeout
        self._last = "no depth read yet"

    @property
    def last_reading(self) -> str:
        """What the last poke saw, or why it could not look: what a timeout reports."""
        return self._last

    def _limit(self) -> int:
        try:
            limit = int(self.max_messages)
        except (TypeError, ValueError) as exc:
            raise AirflowException(f"max_messages must be an integer, got {self.max_messages!r}") from exc
        if limit < 0:
            raise AirflowException(f"max_messages must be >= 0, got {limit}")
        return limit

    def poke(self, context: Any) -> bool:
        limit = self._limit()
        if not self.queue_name:
            raise AirflowException("no queue name given")
        with RabbitMQManagementHook(self.rabbitmq_conn_id, timeout=self.request_timeout) as hook:
            try:
                depth = hook.queue_depth(self.queue_name, include_unacknowledged=self.include_unacknowledged)
            except httpx.TransportError as exc:
                self._last = f"management API unreachable: {type(exc).__name__}: {exc}"
                self.log.info("%s", self._last)
                return False
            if depth is None and not self.missing_ok:
                raise AirflowException(f"queue {self.queue_name!r} does not exist in vhost {hook.vhost!r}")
        self._last = "absent" if depth is None else f"{depth} messages"
        ok = drained(depth, limit, missing_ok=self.missing_ok)
        self.log.info("queue %s: %s (gate: at most %d)%s", self.queue_name, self._last, limit,
                      "" if ok else ", waiting")
        return ok

    def execute(self, context: Any) -> None:
        try:
            super().execute(context)
        except AirflowSensorTimeout as exc:
            raise AirflowSensorTimeout(f"{exc} Queue {self.queue_name} not drained to {self.max_messages}: "
                                       f"{self._last}") from exc
        except AirflowSkipException as exc:
            raise AirflowSkipException(f"{exc} Queue {self.queue_name} not drained: {self._last}") from exc
