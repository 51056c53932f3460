"""A ``TaskStore`` that writes tasks as James does: events in ``eventStore``, reports in its projection.

James keeps a task as the events of its ``TaskAggregate`` and answers ``/tasks`` from
``taskExecutionDetailsProjection``; this store does the same, so either kind of node lists,
reads, awaits and cancels the tasks of the other. What James has no equivalent for (it hands
tasks out through RabbitMQ) stays in ``claims``, our own store: which tasks wait to be claimed,
the conditional claim that makes exactly one worker run a task, its parameters and heartbeat.

Every transition is decided by ``claims`` first (its compare-and-set is the arbiter), then
recorded as the James event (appended at the expected version, re-decided on a conflict, never
appended to a finished aggregate) and projected. Reads of a report come from the projection;
the parameters and heartbeat are added from ``claims`` (from the creation event for a task James
wrote). A task James wrote is never claimed here: it waits in James's RabbitMQ queue, not ours.
A cancel request a James node appended for one of our tasks reaches ``claims`` at the task's
next heartbeat, which reads the report anyway.
"""

from __future__ import annotations

import builtins
import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

from mailserver.eventsourcing.aggregate import CommandHandler, NewEvent
from mailserver.eventsourcing.api import Event, EventStore, EventStoreConflict
from mailserver.tasks import james_events as je
from mailserver.tasks.api import TaskExecutionDetails, TaskStatus
from mailserver.tasks.james_task_json import from_james_task, to_james_task
from mailserver.tasks.projection import TaskProjection
from mailserver.tasks.store import TaskStore


class EventSourcedTaskStore(TaskStore):
    def __init__(self, claims: TaskStore, events: EventStore, projection: TaskProjection) -> None:
        self.claims = claims
        self.events = events
        self.projection = projection
        self._handler: CommandHandler[NewEvent] = CommandHandler(events, je.decide)

    # ------------------------------------------------------------------ reads: the projection
    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None:
        details = self.projection.get(task_id)
        if details is None:
            return None
        own = self.claims.get(task_id)
        if own is not None:
            return replace(details, parameters=own.parameters, heartbeat=own.heartbeat)
        return replace(details, parameters=self._created_parameters(task_id))

    def list(self) -> list[TaskExecutionDetails]:
        own = {d.task_id: d for d in self.claims.list()}
        return [replace(d, parameters=own[d.task_id].parameters, heartbeat=own[d.task_id].heartbeat)
                if d.task_id in own else d for d in self.projection.list()]

    def waiting(self, limit: int) -> builtins.list[TaskExecutionDetails]:
        return self.claims.waiting(limit)

    def running(self) -> builtins.list[TaskExecutionDetails]:
        return self.claims.running()

    # ------------------------------------------------------------------ transitions
    def add(self, details: TaskExecutionDetails) -> None:
        # Events and report first: a task is claimable only once every node can read it.
        self._record(details.task_id, je.created(to_james_task(details.type, details.parameters),
                                                 details.submitted_node), details.submitted_date, details)
        self.claims.add(details)

    def claim(self, task: TaskExecutionDetails, node: str, at: datetime) -> bool:
        if not self.claims.claim(task, node, at):
            return False
        self._record(task.task_id, je.started(node), at)
        return True

    def heartbeat(self, task_id: uuid.UUID, node: str, at: datetime,
                  information: dict[str, Any] | None) -> TaskStatus | None:
        status = self.claims.heartbeat(task_id, node, at, information)
        if status is None:
            return None
        current = self.projection.get(task_id)
        if status is TaskStatus.IN_PROGRESS and current is not None and current.status is TaskStatus.CANCEL_REQUESTED:
            # Requested by a James node: only its event says so. Noted in ``claims`` too, so the
            # task ends canceled there as well; the event is not appended again.
            status = self.claims.request_cancel(task_id, current.cancel_requested_node or node, at) or status
        # Only progress is an event: a beat with the same counters (its timestamp aside) is none.
        if information is not None and (current is None or _without_timestamp(current.additional_information)
                                        != _without_timestamp(information)):
            self._record(task_id, je.updated(information), at)
        return status

    def finish(self, task_id: uuid.UUID, node: str, status: TaskStatus, at: datetime,
               information: dict[str, Any] | None) -> bool:
        if not self.claims.finish(task_id, node, status, at, information):
            return False
        self._record(task_id, je.terminal(status, information), at)
        return True

    def request_cancel(self, task_id: uuid.UUID, node: str, at: datetime) -> TaskStatus | None:
        if self.claims.get(task_id) is None:
            return self._request_cancel_elsewhere(task_id, node, at)
        after = self.claims.request_cancel(task_id, node, at)
        if after in (TaskStatus.CANCEL_REQUESTED, TaskStatus.CANCELLED):
            self._record(task_id, je.cancel_requested(node), at)
        if after is TaskStatus.CANCELLED:
            self._record(task_id, je.terminal(TaskStatus.CANCELLED, self._information(task_id)), at)
        return after

    def fail_stale(self, task_id: uuid.UUID, heartbeat: datetime | None, at: datetime) -> bool:
        if not self.claims.fail_stale(task_id, heartbeat, at):
            return False
        self._record(task_id, je.terminal(TaskStatus.FAILED, self._information(task_id)), at)
        return True

    def remove(self, details: TaskExecutionDetails) -> None:
        # Report last: a task left half-removed by a crash is still listed, so removed again.
        self.claims.remove(details)
        self.events.remove(je.aggregate_id(details.task_id))
        self.projection.remove(details.task_id)

    def adopt(self, details: TaskExecutionDetails) -> bool:
        """Write a task ``claims`` holds but the event store does not (recorded before this store
        was used): its history as the events its dates and nodes show, and its report. False when
        it has a report already (adopted, or written through this store)."""
        if self.projection.get(details.task_id) is not None:
            return False
        history = [je.created(to_james_task(details.type, details.parameters), details.submitted_node)]
        if details.ran_node is not None:
            history.append(je.started(details.ran_node))
        if details.cancel_requested_node is not None:
            history.append(je.cancel_requested(details.cancel_requested_node))
        if details.status.finished:
            history.append(je.terminal(details.status, details.additional_information))
        aggregate = je.aggregate_id(details.task_id)
        try:
            self.events.append_all(aggregate, [Event(aggregate, i, e.type, dict(e.payload))
                                               for i, e in enumerate(history)], None)
        except EventStoreConflict:
            pass   # a previous run appended them and stopped before the report: write it now
        self.projection.save(details)
        return True

    # ------------------------------------------------------------------ internals
    def _request_cancel_elsewhere(self, task_id: uuid.UUID, node: str, at: datetime) -> TaskStatus | None:
        """A task James wrote: the request is its event; James's worker that runs it ends it."""
        details = self.projection.get(task_id)
        if details is None:
            return None
        if not details.status.finished:
            self._record(task_id, je.cancel_requested(node), at)
        current = self.projection.get(task_id)
        return current.status if current else None

    def _record(self, task_id: uuid.UUID, event: NewEvent, at: datetime,
                initial: TaskExecutionDetails | None = None) -> None:
        """Append ``event`` when the aggregate still accepts it, then project what was appended."""
        for appended in self._handler.handle(je.aggregate_id(task_id), event):
            if appended.type == je.CREATED and initial is not None:
                self.projection.save(initial)
                continue
            self._project(task_id, appended, at)

    def _project(self, task_id: uuid.UUID, event: Event, at: datetime) -> None:
        while (current := self.projection.get(task_id)) is not None:
            new = je.project(current, event, at)
            if new == current or self.projection.replace(current, new):
                return

    def _information(self, task_id: uuid.UUID) -> dict[str, Any] | None:
        """The last reported progress: what a task ended by someone else than its worker ends with."""
        current = self.projection.get(task_id)
        return None if current is None else current.additional_information

    def _created_parameters(self, task_id: uuid.UUID) -> dict[str, Any]:
        for event in self.events.get_history(je.aggregate_id(task_id)).events:
            if event.type == je.CREATED and isinstance(event.payload.get("task"), dict):
                return from_james_task(event.payload["task"])[1]
        return {}   # read from a snapshot on: the creation is not in it


def _without_timestamp(information: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if information is None else {k: v for k, v in information.items() if k != "timestamp"}


def adopt_all(store: EventSourcedTaskStore) -> tuple[int, int]:
    """Copy every task of ``store.claims`` missing from the event store: (copied, already there)."""
    copied = present = 0
    for details in store.claims.list():
        if store.adopt(details):
            copied += 1
        else:
            present += 1
    return copied, present
