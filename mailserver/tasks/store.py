"""The task-store port: task records and the conditional status transitions workers rely on.

Every transition is a compare-and-set on the current status (a lightweight transaction on
Cassandra), which is what makes the cluster safe without a coordinator:

* ``claim``: waiting -> inProgress; when two workers race for a task exactly one wins;
* ``request_cancel``: waiting -> canceled at once, inProgress -> canceledRequested (the running
  worker then stops the task cooperatively); finished tasks are left alone;
* ``heartbeat`` / ``finish``: only the worker that owns the running task (``ran_node`` and its
  claim) may refresh or end it, so a task already failed by the stale-heartbeat detection is
  never resurrected by a late worker;
* ``fail_stale``: running -> failed only if the heartbeat is still the stale one that was read;
* ``remove``: forget a task (James's tasks cleanup, ``DELETE /tasks?olderThan=``).
"""

from __future__ import annotations

import builtins
import uuid
from abc import ABC, abstractmethod
from datetime import datetime
from typing import Any

from mailserver.tasks.api import TaskExecutionDetails, TaskStatus


class TaskStore(ABC):
    @abstractmethod
    def add(self, details: TaskExecutionDetails) -> None:
        """Record a new ``waiting`` task and make it claimable."""

    @abstractmethod
    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None: ...

    @abstractmethod
    def list(self) -> list[TaskExecutionDetails]:
        """Every task (unordered)."""

    @abstractmethod
    def waiting(self, limit: int) -> builtins.list[TaskExecutionDetails]:
        """Up to ``limit`` waiting tasks, oldest submission first."""

    @abstractmethod
    def running(self) -> builtins.list[TaskExecutionDetails]:
        """Tasks currently owned by a worker (inProgress or canceledRequested)."""

    @abstractmethod
    def claim(self, task: TaskExecutionDetails, node: str, at: datetime) -> bool:
        """waiting -> inProgress on ``node``, heartbeat ``at``; False when it was not waiting."""

    @abstractmethod
    def heartbeat(self, task_id: uuid.UUID, node: str, at: datetime,
                  information: dict[str, Any] | None) -> TaskStatus | None:
        """Refresh the heartbeat (and progress) of a task ``node`` runs.

        Returns the status (inProgress or canceledRequested), or None when ``node`` no longer owns a
        running task with this id (finished, failed by the stale detection ...): stop it then.
        """

    @abstractmethod
    def finish(self, task_id: uuid.UUID, node: str, status: TaskStatus, at: datetime,
               information: dict[str, Any] | None) -> bool:
        """Running on ``node`` -> ``status`` (completed, canceled or failed); False if not owned."""

    @abstractmethod
    def request_cancel(self, task_id: uuid.UUID, node: str, at: datetime) -> TaskStatus | None:
        """The status after the request (None for an unknown task); a finished task is unchanged."""

    @abstractmethod
    def fail_stale(self, task_id: uuid.UUID, heartbeat: datetime | None, at: datetime) -> bool:
        """Running with exactly this ``heartbeat`` -> failed; False when it moved on meanwhile."""

    @abstractmethod
    def remove(self, details: TaskExecutionDetails) -> None:
        """Forget a task (its record and schedule entries); a task already gone is no error."""
