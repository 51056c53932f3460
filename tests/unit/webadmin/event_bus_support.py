"""WebAdmin over the in-process event bus and memory dead letters, with a worker running the tasks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mailserver.events.in_process import InProcessEventBus
from mailserver.tasks.builtin.registration import EventBusParts, register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.webadmin.context import WebAdminContext
from tests.unit.webadmin.webadmin_support import make_context

NODE = "events-node"


def group(name: str) -> str:
    """A James-like listener group (a fully qualified class name with ``$``)."""
    return f"org.apache.james.test.{name}{uuid.uuid4().hex[:6]}${name}Group"


@contextmanager
def event_bus_context(bus: InProcessEventBus | None = None, **parts: Any) -> Iterator[WebAdminContext]:
    """A context whose dead-letter routes work end to end (the bus's dead letters are the context's)."""
    bus = bus or InProcessEventBus(retries=0)
    event_bus = EventBusParts(bus.dead_letters, bus, **parts)
    store = MemoryTaskStore()
    registry = register_builtin(TaskRegistry(), event_bus=event_bus)
    ctx = make_context(tasks=TaskManager(store, NODE), dead_letters=bus.dead_letters, bus=bus, **parts)
    worker = TaskWorker(store, registry, NODE, poll_interval=0.02, heartbeat_interval=0.05)
    worker.start()
    try:
        yield ctx
    finally:
        worker.stop()


def await_task(client, response) -> dict:
    assert response.status_code == 201, response.text
    task_id = response.json()["taskId"]
    assert response.headers["location"] == f"/tasks/{task_id}"
    return client.get(f"/tasks/{task_id}/await?timeout=30").json()
