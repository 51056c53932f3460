"""``TaskManager``: submit, read, list, cancel and await tasks, on any ``TaskStore``.

It never runs anything: a ``TaskWorker`` (on this node or another) does. Awaiting polls the
store, because the task may run elsewhere; the interval starts short (most admin tasks are
quick) and backs off to half a second.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
import uuid
from collections.abc import Callable
from datetime import datetime

from mailserver.observability.metrics import Metrics
from mailserver.tasks.api import AwaitTimeout, Task, TaskExecutionDetails, TaskNotFound, TaskStatus, utc_now
from mailserver.tasks.cancel_requests import CancelRequests
from mailserver.tasks.store import TaskStore

FIRST_POLL, MAX_POLL = 0.02, 0.5

log = logging.getLogger(__name__)


def default_node_name() -> str:
    """What James reports as ``submittedFrom`` / ``executedOn``: the host name."""
    return socket.gethostname()


class TaskManager:
    def __init__(self, store: TaskStore, node: str | None = None, *, metrics: Metrics | None = None,
                 clock: Callable[[], datetime] = utc_now, cancel_requests: CancelRequests | None = None) -> None:
        """``cancel_requests``: where a cancel request is announced to the workers of every node (James's
        and ours) once recorded; without it, our workers see it at their next heartbeat only."""
        self.store = store
        self.cancel_requests = cancel_requests
        self.node = node or default_node_name()
        self.metrics = metrics
        self._clock = clock

    def submit(self, task: Task) -> uuid.UUID:
        """Store ``task`` as waiting; a worker of any node will claim it."""
        details = TaskExecutionDetails.waiting(task, self.node, self._clock())
        json.dumps(details.parameters)   # fail here, not on the node that would have to rebuild it
        self.store.add(details)
        if self.metrics is not None:
            self.metrics.tasks.labels(details.type, TaskStatus.WAITING.value).inc()
        return details.task_id

    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails:
        details = self.store.get(task_id)
        if details is None:
            raise TaskNotFound(str(task_id))
        return details

    def list(self, status: TaskStatus | None = None) -> list[TaskExecutionDetails]:
        """Newest submission first (James's order)."""
        tasks = [d for d in self.store.list() if status is None or d.status is status]
        return sorted(tasks, key=lambda d: (d.submitted_date, str(d.task_id)), reverse=True)

    def cancel(self, task_id: uuid.UUID) -> TaskStatus | None:
        """Cooperative: a waiting task is canceled at once, a running one when its worker notices."""
        before = self.store.get(task_id)
        status = self.store.request_cancel(task_id, self.node, self._clock())
        if self.metrics is not None and before is not None and status is not None and status is not before.status:
            self.metrics.tasks.labels(before.type, status.value).inc()
        if status is TaskStatus.CANCEL_REQUESTED and self.cancel_requests is not None:
            _announce(self.cancel_requests, task_id)
        return status

    def await_(self, task_id: uuid.UUID, timeout: float) -> TaskExecutionDetails:
        """The report once the task is finished; AwaitTimeout after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        pause = FIRST_POLL
        while True:
            details = self.get(task_id)
            if details.status.finished:
                return details
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AwaitTimeout(f"task {task_id} not finished after {timeout} s")
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, MAX_POLL)

    async def await_async(self, task_id: uuid.UUID, timeout: float) -> TaskExecutionDetails:
        """``await_`` for the event loop: store reads in a thread, no thread held while waiting."""
        deadline = time.monotonic() + timeout
        pause = FIRST_POLL
        while True:
            details = await asyncio.to_thread(self.get, task_id)
            if details.status.finished:
                return details
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AwaitTimeout(f"task {task_id} not finished after {timeout} s")
            await asyncio.sleep(min(pause, remaining))
            pause = min(pause * 2, MAX_POLL)


def _announce(cancel_requests: CancelRequests, task_id: uuid.UUID) -> None:
    # The request is recorded already: a lost announcement only delays our workers (they read it at
    # their heartbeat), but a James worker would run the task to its end, hence the error log.
    try:
        cancel_requests.publish(task_id)
    except Exception:
        log.exception("task %s: the cancel request was recorded but not published to RabbitMQ", task_id)
