"""In-memory ``TaskStore``: one process (unit tests, single-node development), same transitions."""

from __future__ import annotations

import builtins
import threading
import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from mailserver.tasks.api import TaskExecutionDetails, TaskStatus
from mailserver.tasks.store import TaskStore


class MemoryTaskStore(TaskStore):
    def __init__(self) -> None:
        self._tasks: dict[uuid.UUID, TaskExecutionDetails] = {}
        self._lock = threading.Lock()

    def add(self, details: TaskExecutionDetails) -> None:
        with self._lock:
            self._tasks[details.task_id] = details

    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None:
        with self._lock:
            return self._tasks.get(task_id)

    def list(self) -> list[TaskExecutionDetails]:
        with self._lock:
            return list(self._tasks.values())

    def waiting(self, limit: int) -> builtins.list[TaskExecutionDetails]:
        with self._lock:
            waiting = [d for d in self._tasks.values() if d.status is TaskStatus.WAITING]
        # A stable sort on the date alone: tasks submitted within the same millisecond keep their
        # submission order (the dict's insertion order) instead of a random task-id order.
        waiting.sort(key=lambda d: d.submitted_date)
        return waiting[:limit]

    def running(self) -> builtins.list[TaskExecutionDetails]:
        with self._lock:
            return [d for d in self._tasks.values() if d.status.running]

    def claim(self, task: TaskExecutionDetails, node: str, at: datetime) -> bool:
        with self._lock:
            current = self._tasks.get(task.task_id)
            if current is None or current.status is not TaskStatus.WAITING:
                return False
            self._tasks[task.task_id] = current.with_status(TaskStatus.IN_PROGRESS, at, ran_node=node, heartbeat=at)
            return True

    def heartbeat(self, task_id: uuid.UUID, node: str, at: datetime,
                  information: dict[str, Any] | None) -> TaskStatus | None:
        with self._lock:
            current = self._owned(task_id, node)
            if current is None:
                return None
            self._tasks[task_id] = replace(current, heartbeat=at, additional_information=information)
            return current.status

    def finish(self, task_id: uuid.UUID, node: str, status: TaskStatus, at: datetime,
               information: dict[str, Any] | None) -> bool:
        with self._lock:
            current = self._owned(task_id, node)
            if current is None:
                return False
            self._tasks[task_id] = current.with_status(status, at, additional_information=information)
            return True

    def request_cancel(self, task_id: uuid.UUID, node: str, at: datetime) -> TaskStatus | None:
        with self._lock:
            current = self._tasks.get(task_id)
            if current is None:
                return None
            if current.status is TaskStatus.WAITING:
                current = current.with_status(TaskStatus.CANCELLED, at, cancel_requested_node=node)
            elif current.status is TaskStatus.IN_PROGRESS:
                current = current.with_status(TaskStatus.CANCEL_REQUESTED, at, cancel_requested_node=node)
            self._tasks[task_id] = current
            return current.status

    def fail_stale(self, task_id: uuid.UUID, heartbeat: datetime | None, at: datetime) -> bool:
        with self._lock:
            current = self._tasks.get(task_id)
            if current is None or not current.status.running or current.heartbeat != heartbeat:
                return False
            self._tasks[task_id] = current.with_status(TaskStatus.FAILED, at)
            return True

    def remove(self, details: TaskExecutionDetails) -> None:
        with self._lock:
            self._tasks.pop(details.task_id, None)

    def _owned(self, task_id: uuid.UUID, node: str) -> TaskExecutionDetails | None:
        current = self._tasks.get(task_id)
        if current is None or not current.status.running or current.ran_node != node:
            return None
        return current
