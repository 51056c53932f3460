"""Poll WebAdmin's ``/healthcheck`` from the triggerer until it is good enough, or a deadline passes.

Only the connection id is serialised: the URL and secrets are resolved where the trigger runs,
so they never land in the trigger table. ``deadline`` is absolute (epoch seconds) so a trigger
re-created after a triggerer restart keeps the sensor's original timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
from airflow.sdk import BaseHook
from airflow.triggers.base import BaseTrigger, TriggerEvent

from mailplatform.hooks.webadmin import (
    DEFAULT_CONN_ID,
    WebAdminApiError,
    client_settings,
    describe,
    failing_components,
    health_body,
    health_request,
)


class WebAdminHealthTrigger(BaseTrigger):
    """Fires one event: ``{"status": "healthy" | "timeout" | "error", "message": str, "health": report}``."""

    def __init__(self, *, webadmin_conn_id: str = DEFAULT_CONN_ID, components: Sequence[str] | None = None,
                 accept_degraded: bool = False, poll_interval: float = 30.0, deadline: float | None = None,
                 request_timeout: float = 10.0) -> None:
        super().__init__()
        self.webadmin_conn_id = webadmin_conn_id
        self.components = list(components) if components else None
        self.accept_degraded = accept_degraded
        self.poll_interval = poll_interval
        self.deadline = deadline
        self.request_timeout = request_timeout

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("mailplatform.triggers.health.WebAdminHealthTrigger", {
            "webadmin_conn_id": self.webadmin_conn_id, "components": self.components,
            "accept_degraded": self.accept_degraded, "poll_interval": self.poll_interval,
            "deadline": self.deadline, "request_timeout": self.request_timeout})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        base_url, headers = client_settings(await BaseHook.aget_connection(self.webadmin_conn_id))
        path, params = health_request(checks=self.components)
        body: dict[str, Any] | None = None
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=self.request_timeout) as client:
            while True:
                try:
                    body = health_body(await client.get(path, params=params))
                    failing = failing_components(body, self.accept_degraded)
                    if not failing:
                        yield TriggerEvent({"status": "healthy", "message": "healthy", "health": body})
                        return
                    problem = describe(failing)
                except WebAdminApiError as exc:   # e.g. 404 unknown component: waiting cannot fix it
                    yield TriggerEvent({"status": "error", "message": str(exc), "health": exc.body})
                    return
                except httpx.TransportError as exc:   # a restarting server is not healthy yet, not an error
                    problem = f"WebAdmin unreachable at {base_url}: {type(exc).__name__}: {exc}"
                self.log.info("WebAdmin not healthy yet: %s", problem)
                remaining = None if self.deadline is None else self.deadline - time.time()
                if remaining is not None and remaining <= 0:
                    yield TriggerEvent({"status": "timeout", "message": problem, "health": body})
                    return
                await asyncio.sleep(self.poll_interval if remaining is None else min(self.poll_interval, remaining))
