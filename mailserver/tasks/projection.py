"""James's ``TaskExecutionDetailsProjection``: the report of every task, read by ``/tasks``.

Written after each task event (read, transform, write back, as James's subscriber does), but
the write back is conditioned on the status that was read: a progress update racing a cancel
request or the end of the task never puts back an older status. Records carry no parameters and
no heartbeat (those stay with our worker's claims).
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from dataclasses import replace

from mailserver.tasks.api import TaskExecutionDetails


class TaskProjection(ABC):
    @abstractmethod
    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None: ...

    @abstractmethod
    def list(self) -> list[TaskExecutionDetails]: ...

    @abstractmethod
    def save(self, details: TaskExecutionDetails) -> None: ...

    @abstractmethod
    def replace(self, read: TaskExecutionDetails, new: TaskExecutionDetails) -> bool:
        """Write ``new`` if the stored status is still ``read``'s; False otherwise (read again)."""

    @abstractmethod
    def remove(self, task_id: uuid.UUID) -> None: ...


def projected(details: TaskExecutionDetails) -> TaskExecutionDetails:
    """What the projection keeps of ``details``."""
    return replace(details, parameters={}, heartbeat=None)


class MemoryTaskProjection(TaskProjection):
    def __init__(self) -> None:
        self._details: dict[uuid.UUID, TaskExecutionDetails] = {}
        self._lock = threading.Lock()

    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None:
        with self._lock:
            return self._details.get(task_id)

    def list(self) -> list[TaskExecutionDetails]:
        with self._lock:
            return list(self._details.values())

    def save(self, details: TaskExecutionDetails) -> None:
        with self._lock:
            self._details[details.task_id] = projected(details)

    def replace(self, read: TaskExecutionDetails, new: TaskExecutionDetails) -> bool:
        with self._lock:
            current = self._details.get(read.task_id)
            if current is None or current.status is not read.status:
                return False
            self._details[read.task_id] = projected(new)
            return True

    def remove(self, task_id: uuid.UUID) -> None:
        with self._lock:
            self._details.pop(task_id, None)
