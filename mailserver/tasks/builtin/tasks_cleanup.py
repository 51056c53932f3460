"""James's ``tasks-cleanup`` task (``DELETE /tasks?olderThan=<duration>``): forget old tasks.

As James's ``TasksCleanupService``: every task submitted before ``olderThan`` is looked at
(``processedTaskCount``) and removed (``removedTaskCount``) when it is finished, or when it
shows no sign of life since ``olderThan`` (a node died while running or before claiming it).
Its last sign of life is the latest of its submission, its start and its heartbeat (James: the
start or the timestamp of its details). A ``canceledRequested`` task is still owned by a worker
here, so it is judged by its heartbeat like a running one (James removes it at once).
"""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from mailserver.tasks.api import Result, Task, TaskExecutionDetails, TaskStatus, format_instant, java_instant
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.store import TaskStore

UNFINISHED = (TaskStatus.WAITING, TaskStatus.IN_PROGRESS, TaskStatus.CANCEL_REQUESTED)


def last_activity(details: TaskExecutionDetails) -> datetime:
    return max(d for d in (details.submitted_date, details.started_date, details.heartbeat) if d is not None)


def removable(details: TaskExecutionDetails, older_than: datetime) -> bool:
    """Pure: whether the cleanup with horizon ``older_than`` forgets this task."""
    if details.submitted_date >= older_than:
        return False
    if details.status not in UNFINISHED:
        return True
    return last_activity(details) < older_than


class TasksCleanupTask(Task):
    type = "tasks-cleanup"

    def __init__(self, store: TaskStore, older_than: datetime) -> None:
        self.store = store
        self.older_than = older_than
        self._lock = threading.Lock()
        self._processed = 0
        self._removed = 0
        self._failed = 0

    def run(self) -> Result:
        for details in self.store.list():
            if self.cancel_requested:
                break
            if details.submitted_date >= self.older_than:
                continue
            removed = False
            if removable(details, self.older_than):
                try:
                    self.store.remove(details)
                    removed = True
                except Exception:   # one task that cannot be removed does not stop the others (James: PARTIAL)
                    with self._lock:
                        self._failed += 1
            with self._lock:
                self._processed += 1
                self._removed += removed
        return Result.FAILED if self._failed else Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"olderThan": java_instant(self.older_than)}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            return {"removedTaskCount": self._removed, "processedTaskCount": self._processed,
                    "olderThan": format_instant(self.older_than)}


def register(registry: TaskRegistry, store: TaskStore) -> None:
    registry.register(TasksCleanupTask.type,
                      lambda p: TasksCleanupTask(store, datetime.fromisoformat(p["olderThan"])))
