"""The task abstraction and James's execution report (status strings, dates, JSON shape).

Wire names follow the James code, not its docs (webadmin reference §3.2): statuses
``waiting``, ``inProgress``, ``canceledRequested``, ``completed``, ``canceled``, ``failed``; the
cancel date is ``canceledDate``; absent dates are omitted; dates are
``yyyy-MM-dd'T'HH:mm:ss.SSSZ`` (``2024-05-02T10:15:24.805+0000``) while the ``timestamp`` inside
``additionalInformation`` is an ISO instant (``2024-05-02T10:15:25.019Z``).
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, overload


class TaskStatus(StrEnum):
    WAITING = "waiting"
    IN_PROGRESS = "inProgress"
    CANCEL_REQUESTED = "canceledRequested"
    COMPLETED = "completed"
    CANCELLED = "canceled"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in FINISHED

    @property
    def running(self) -> bool:
        """Owned by a worker: its heartbeat must stay fresh."""
        return self in (TaskStatus.IN_PROGRESS, TaskStatus.CANCEL_REQUESTED)

    @classmethod
    def parse(cls, raw: str) -> TaskStatus:
        """Case-insensitive, as James's ``TaskManager.Status.fromString``; ValueError otherwise."""
        for status in cls:
            if status.value.lower() == raw.strip().lower():
                return status
        raise ValueError(f"Unknown status value '{raw}'")


FINISHED = frozenset({TaskStatus.COMPLETED, TaskStatus.CANCELLED, TaskStatus.FAILED})


class Result(StrEnum):
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class TaskNotFound(LookupError):
    pass


class AwaitTimeout(TimeoutError):
    """The task did not finish within the awaited time."""


class Task(ABC):
    """One unit of admin work. ``parameters()`` must rebuild it through the registry on any node.

    Cancellation is cooperative: long loops check ``cancel_requested`` and return early; the
    worker then records ``canceled``. ``additional_information()`` is read by the worker while the
    task runs (from another thread), so counters it reports must be safe to read concurrently.
    """

    type: str   # a class attribute of most tasks; DagRunTask's is its procedure's, set per instance
    _cancel_flag: threading.Event

    def __new__(cls, *args: Any, **kwargs: Any) -> Task:
        # The flag exists whatever the subclass's __init__ does (no super().__init__() to forget).
        self = super().__new__(cls)
        self._cancel_flag = threading.Event()
        return self

    @abstractmethod
    def run(self) -> Result:
        """Do the work; raising is the same as returning FAILED."""

    def parameters(self) -> dict[str, Any]:
        """JSON-serialisable arguments the registered factory rebuilds this task from."""
        return {}

    def additional_information(self) -> dict[str, Any] | None:
        """James's per-type details (without ``type`` and ``timestamp``, added on the way out)."""
        return None

    def cancel(self) -> None:
        self._cancel_flag.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_flag.is_set()


def utc_now() -> datetime:
    # Millisecond precision: what a Cassandra ``timestamp`` keeps, so a report reads back equal.
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


@overload
def aware(value: datetime) -> datetime: ...
@overload
def aware(value: None) -> None: ...
@overload
def aware(value: datetime | None) -> datetime | None: ...


def aware(value: datetime | None) -> datetime | None:
    """The Cassandra driver returns naive datetimes that are UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def format_date(value: datetime) -> str:
    """James's report date: ``2024-05-02T10:15:24.805+0000`` (UTC, millisecond, offset without colon)."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}+0000"


def format_instant(value: datetime) -> str:
    """An ISO-8601 instant as Java prints it at millisecond precision: ``2024-05-02T10:15:25.019Z``."""
    value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def java_instant(value: datetime) -> str:
    """An instant as Java's ``Instant.toString`` prints it (a fraction of 0, 3 or 6 digits, as needed),
    without losing a microsecond: ``2025-11-28T14:48:39.383Z``."""
    value = value.astimezone(UTC)
    micros = value.microsecond
    fraction = "" if micros == 0 else f".{micros // 1000:03d}" if micros % 1000 == 0 else f".{micros:06d}"
    return value.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"


def information(task: Task, at: datetime) -> dict[str, Any] | None:
    """The ``additionalInformation`` object of ``task`` now: its details plus ``type`` and ``timestamp``."""
    details = task.additional_information()
    if details is None:
        return None
    return {"type": task.type, **details, "timestamp": format_instant(at)}


@dataclass(frozen=True)
class TaskExecutionDetails:
    """What is stored about a task; ``to_json`` is James's execution report."""

    task_id: uuid.UUID
    type: str
    status: TaskStatus
    submitted_date: datetime
    submitted_node: str
    parameters: dict[str, Any] = field(default_factory=dict)
    additional_information: dict[str, Any] | None = None
    started_date: datetime | None = None
    completed_date: datetime | None = None
    canceled_date: datetime | None = None
    failed_date: datetime | None = None
    ran_node: str | None = None
    cancel_requested_node: str | None = None
    heartbeat: datetime | None = None   # refreshed by the executing worker while running

    @classmethod
    def waiting(cls, task: Task, node: str, at: datetime, task_id: uuid.UUID | None = None) -> TaskExecutionDetails:
        return cls(task_id or uuid.uuid4(), task.type, TaskStatus.WAITING, at, node, task.parameters(),
                   information(task, at))

    def with_status(self, status: TaskStatus, at: datetime, **changes: Any) -> TaskExecutionDetails:
        """This record moved to ``status`` at ``at`` (the matching date set)."""
        dates = {TaskStatus.IN_PROGRESS: "started_date", TaskStatus.COMPLETED: "completed_date",
                 TaskStatus.CANCELLED: "canceled_date", TaskStatus.FAILED: "failed_date"}
        if status in dates:
            changes[dates[status]] = at
        return replace(self, status=status, **changes)

    def to_json(self) -> dict[str, Any]:
        report: dict[str, Any] = {"taskId": str(self.task_id), "type": self.type, "status": self.status.value,
                                  "submittedFrom": self.submitted_node, "executedOn": self.ran_node,
                                  "cancelledFrom": self.cancel_requested_node,
                                  "submitDate": format_date(self.submitted_date)}
        for name, value in (("startedDate", self.started_date), ("completedDate", self.completed_date),
                            ("canceledDate", self.canceled_date), ("failedDate", self.failed_date)):
            if value is not None:   # James omits absent dates (NON_ABSENT)
                report[name] = format_date(value)
        report["additionalInformation"] = self.additional_information
        return report
