"""James's task aggregate: the events of a task in ``eventStore``, the decisions on them, their projection.

A task is the aggregate ``Task/<taskId>``; its events are James's ``TaskEvent`` DTOs (type names
``task-manager-*``, envelope keys ``event`` and ``aggregate``, the bare task id). The decisions
are ``TaskAggregate``'s: nothing is appended to a finished task, progress only to a running one.
``project`` applies an event to a ``TaskExecutionDetails`` as James's projection subscriber does
(``TaskExecutionDetails.started`` / ``cancelRequested`` / ``completed`` ...), dated ``at``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from mailserver.eventsourcing.aggregate import NewEvent
from mailserver.eventsourcing.api import Event, EventJson, History
from mailserver.tasks.api import TaskExecutionDetails, TaskStatus
from mailserver.tasks.james_task_json import from_event_information, to_event_information

PREFIX = "Task/"
TASK_EVENT_JSON = EventJson(event_id_key="event", aggregate_key="aggregate", aggregate_prefix=PREFIX)

CREATED = "task-manager-created"
STARTED = "task-manager-started"
CANCEL_REQUESTED = "task-manager-cancel-requested"
COMPLETED = "task-manager-completed"
FAILED = "task-manager-failed"
CANCELLED = "task-manager-cancelled"
UPDATED = "task-manager-updated"

# James's DecisionProjection: the status each event leaves the aggregate in.
STATUS_AFTER = {CREATED: TaskStatus.WAITING, STARTED: TaskStatus.IN_PROGRESS,
                CANCEL_REQUESTED: TaskStatus.CANCEL_REQUESTED, COMPLETED: TaskStatus.COMPLETED,
                FAILED: TaskStatus.FAILED, CANCELLED: TaskStatus.CANCELLED, UPDATED: TaskStatus.IN_PROGRESS}
TERMINAL = {COMPLETED: TaskStatus.COMPLETED, FAILED: TaskStatus.FAILED, CANCELLED: TaskStatus.CANCELLED}


def aggregate_id(task_id: uuid.UUID) -> str:
    return f"{PREFIX}{task_id}"


def task_id_of(aggregate: str) -> uuid.UUID:
    return uuid.UUID(aggregate.removeprefix(PREFIX))


def created(task: dict[str, Any], hostname: str) -> NewEvent:
    """``task`` is James's task DTO: ``{"type": ..., <its fields>}``."""
    return NewEvent(CREATED, {"task": task, "hostname": hostname})


def started(hostname: str) -> NewEvent:
    return NewEvent(STARTED, {"hostname": hostname})


def cancel_requested(hostname: str) -> NewEvent:
    return NewEvent(CANCEL_REQUESTED, {"hostname": hostname})


def updated(information: dict[str, Any]) -> NewEvent:
    # A snapshot, as James's AdditionalInformationUpdated (isASnapshot): histories are read from it on.
    return NewEvent(UPDATED, {"additionalInformation": to_event_information(information)}, snapshot=True)


def terminal(status: TaskStatus, information: dict[str, Any] | None) -> NewEvent:
    """Completed (result COMPLETED), Failed or Cancelled; an absent information is omitted (NON_ABSENT)."""
    payload: dict[str, Any] = {}
    if information is not None:
        payload["additionalInformation"] = to_event_information(information)
    if status is TaskStatus.COMPLETED:
        return NewEvent(COMPLETED, {"result": "COMPLETED", **payload})
    if status is TaskStatus.FAILED:
        return NewEvent(FAILED, payload)
    if status is TaskStatus.CANCELLED:
        return NewEvent(CANCELLED, payload)
    raise ValueError(f"{status} is not a terminal status")


def status_of(history: History) -> TaskStatus | None:
    """The aggregate's status (None without events); a history read from a snapshot starts inProgress."""
    status = None
    for event in history.events:
        status = STATUS_AFTER.get(event.type, status)
    return status


def decide(history: History, event: NewEvent) -> list[NewEvent]:
    """``TaskAggregate``'s rules: the event, or nothing when it no longer applies."""
    status = status_of(history)
    if event.type == CREATED:
        return [event] if status is None else []
    if status is None or status.finished:
        return []
    if event.type == UPDATED:
        return [event] if status.running else []
    if event.type == CANCEL_REQUESTED and status is TaskStatus.CANCEL_REQUESTED:
        return []   # already requested: a second request changes nothing
    return [event]


def project(details: TaskExecutionDetails, event: Event, at: datetime) -> TaskExecutionDetails:
    """The projection after ``event`` (James's transitions; a transition that does not apply is ignored)."""
    status, payload = details.status, event.payload
    if event.type == STARTED and status is TaskStatus.WAITING:
        return details.with_status(TaskStatus.IN_PROGRESS, at, ran_node=payload.get("hostname"))
    if event.type == CANCEL_REQUESTED and status in (TaskStatus.WAITING, TaskStatus.IN_PROGRESS):
        # James dates the request itself as canceledDate; the effective cancel dates it again.
        return replace(details, status=TaskStatus.CANCEL_REQUESTED, canceled_date=at,
                       cancel_requested_node=payload.get("hostname"))
    if event.type == UPDATED and status.running:
        return replace(details, additional_information=_information(payload))
    if event.type in TERMINAL and _may_end(status, TERMINAL[event.type]):
        return details.with_status(TERMINAL[event.type], at, additional_information=_information(payload))
    return details


def _information(payload: Mapping[str, Any]) -> dict[str, Any] | None:
    """The event's additionalInformation in our (WebAdmin) form."""
    information = payload.get("additionalInformation")
    return from_event_information(information) if isinstance(information, dict) else None


def _may_end(status: TaskStatus, end: TaskStatus) -> bool:
    if end is TaskStatus.FAILED:   # James fails only a running task
        return status.running
    return not status.finished
