"""``TaskStore`` on ``taskExecutions`` (one row per task) and ``taskSchedule`` (its index).

Every status change is a lightweight transaction conditioned on the current status (and, for the
owner's writes, on ``ranNode``): Paxos serialises racing claims, cancels, heartbeats and stale
detections, so two nodes never both start a task and a late worker never overwrites a task
another node failed. Only the first write of a row is a plain insert (before any LWT on it).

``taskSchedule`` holds a ``waiting`` partition (clustered by submission date: oldest first) and a
``running`` one (what the stale-heartbeat detection scans). Entries are written before the
transition they announce and removed lazily, by whoever reads an entry whose task has moved on:
a crash between the two writes leaves a stale entry, never a task nobody can find.
"""

from __future__ import annotations

import builtins
import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from mailserver.cassandra.session import CassandraSession
from mailserver.tasks.api import TaskExecutionDetails, TaskStatus, aware, utc_now
from mailserver.tasks.store import TaskStore

WAITING, RUNNING = "waiting", "running"
COLUMNS = ("taskId, type, parameters, status, additionalInformation, submittedNode, ranNode, cancelRequestedNode, "
           "submittedDate, startedDate, completedDate, canceledDate, failedDate, heartbeat")
ADD = ("INSERT INTO taskExecutions (taskId, type, parameters, status, additionalInformation, submittedNode, "
       "submittedDate) VALUES (?, ?, ?, ?, ?, ?, ?)")
SELECT_ONE = f"SELECT {COLUMNS} FROM taskExecutions WHERE taskId = ?"
SELECT_ALL = f"SELECT {COLUMNS} FROM taskExecutions"
SCHEDULE = "SELECT submittedDate, taskId FROM taskSchedule WHERE phase = ? LIMIT ?"
SCHEDULE_ADD = "INSERT INTO taskSchedule (phase, submittedDate, taskId) VALUES (?, ?, ?)"
SCHEDULE_REMOVE = "DELETE FROM taskSchedule WHERE phase = ? AND submittedDate = ? AND taskId = ?"
CLAIM = ("UPDATE taskExecutions SET status = ?, ranNode = ?, startedDate = ?, heartbeat = ? "
         "WHERE taskId = ? IF status = ?")
BEAT = ("UPDATE taskExecutions SET heartbeat = ?, additionalInformation = ? "
        "WHERE taskId = ? IF status = ? AND ranNode = ?")
CANCEL_WAITING = ("UPDATE taskExecutions SET status = ?, canceledDate = ?, cancelRequestedNode = ? "
                  "WHERE taskId = ? IF status = ?")
CANCEL_RUNNING = "UPDATE taskExecutions SET status = ?, cancelRequestedNode = ? WHERE taskId = ? IF status = ?"
FAIL_STALE = "UPDATE taskExecutions SET status = ?, failedDate = ? WHERE taskId = ? IF status = ? AND heartbeat = ?"
END_DATE = {TaskStatus.COMPLETED: "completedDate", TaskStatus.CANCELLED: "canceledDate",
            TaskStatus.FAILED: "failedDate"}
RUNNING_STATUSES = (TaskStatus.IN_PROGRESS, TaskStatus.CANCEL_REQUESTED)
MAX_SCHEDULE_SCAN = 1000   # per poll: running tasks are few; waiting ones are read oldest first
ORPHAN_AFTER = timedelta(minutes=5)   # a waiting entry whose row is still missing then never gets one


class CassandraTaskStore(TaskStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def add(self, details: TaskExecutionDetails) -> None:
        # Entry first: a row without its entry could never be claimed; an entry without its row
        # (the submitter died in between, and the client got an error) is dropped once orphaned.
        self.s.execute(SCHEDULE_ADD, (WAITING, details.submitted_date, details.task_id))
        self.s.execute(ADD, (details.task_id, details.type, json.dumps(details.parameters), details.status.value,
                             _dump(details.additional_information), details.submitted_node, details.submitted_date))

    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None:
        row = self.s.one(SELECT_ONE, (task_id,))
        return _details(row) if row else None

    def list(self) -> list[TaskExecutionDetails]:
        return [_details(row) for row in self.s.execute(SELECT_ALL)]

    def waiting(self, limit: int) -> builtins.list[TaskExecutionDetails]:
        found: list[TaskExecutionDetails] = []
        # Read past entries of tasks canceled or claimed meanwhile (dropped as they are met).
        for entry in self.s.execute(SCHEDULE, (WAITING, limit + 100)):
            details = self.get(entry["taskid"])
            if details is None:
                if utc_now() - aware(entry["submitteddate"]) > ORPHAN_AFTER:
                    self.s.execute(SCHEDULE_REMOVE, (WAITING, entry["submitteddate"], entry["taskid"]))
                continue   # otherwise its row is being written
            if details.status is not TaskStatus.WAITING:
                self._unschedule(WAITING, details)
                continue
            found.append(details)
            if len(found) >= limit:
                break
        return found

    def running(self) -> builtins.list[TaskExecutionDetails]:
        found = []
        for entry in self.s.execute(SCHEDULE, (RUNNING, MAX_SCHEDULE_SCAN)):
            details = self.get(entry["taskid"])
            if details is None or details.status is TaskStatus.WAITING:
                continue   # announced by a claimer that has not claimed (yet, or ever): harmless
            if details.status.finished:
                self._unschedule(RUNNING, details)
                continue
            found.append(details)
        return found

    def claim(self, task: TaskExecutionDetails, node: str, at: datetime) -> bool:
        # Announced as running first: a claimer dying right after its claim is still found.
        self.s.execute(SCHEDULE_ADD, (RUNNING, task.submitted_date, task.task_id))
        applied, _ = self._cas(CLAIM, (TaskStatus.IN_PROGRESS.value, node, at, at, task.task_id,
                                       TaskStatus.WAITING.value))
        # Won or lost, the task is no longer waiting. The running entry stays either way: when
        # lost, it is the winner's entry too (same key).
        self._unschedule(WAITING, task)
        return applied

    def heartbeat(self, task_id: uuid.UUID, node: str, at: datetime,
                  information: dict[str, Any] | None) -> TaskStatus | None:
        for status in RUNNING_STATUSES:   # statuses only move forward: two tries are enough
            applied, current = self._cas(BEAT, (at, _dump(information), task_id, status.value, node))
            if applied:
                return status
            if not _owned(current, node):
                return None
        return None

    def finish(self, task_id: uuid.UUID, node: str, status: TaskStatus, at: datetime,
               information: dict[str, Any] | None) -> bool:
        cql = (f"UPDATE taskExecutions SET status = ?, {END_DATE[status]} = ?, additionalInformation = ? "
               "WHERE taskId = ? IF status = ? AND ranNode = ?")
        for expected in RUNNING_STATUSES:   # a cancel request may land in between: inProgress, then this
            applied, current = self._cas(cql, (status.value, at, _dump(information), task_id, expected.value, node))
            if applied:
                return True
            if not _owned(current, node):
                return False
        return False

    def request_cancel(self, task_id: uuid.UUID, node: str, at: datetime) -> TaskStatus | None:
        while True:
            row = self.s.one(SELECT_ONE, (task_id,), strong=True)
            if row is None:
                return None
            status = TaskStatus(row["status"])
            if status is TaskStatus.WAITING:
                applied, _ = self._cas(CANCEL_WAITING, (TaskStatus.CANCELLED.value, at, node, task_id, status.value))
                if applied:
                    return TaskStatus.CANCELLED
            elif status is TaskStatus.IN_PROGRESS:
                applied, _ = self._cas(CANCEL_RUNNING, (TaskStatus.CANCEL_REQUESTED.value, node, task_id,
                                                        status.value))
                if applied:
                    return TaskStatus.CANCEL_REQUESTED
            else:
                return status   # already requested, or finished: nothing to do
            # Lost a race (claimed, finished ...): look again; each retry follows a real transition.

    def fail_stale(self, task_id: uuid.UUID, heartbeat: datetime | None, at: datetime) -> bool:
        for status in RUNNING_STATUSES:
            applied, current = self._cas(FAIL_STALE, (TaskStatus.FAILED.value, at, task_id, status.value, heartbeat))
            if applied:
                return True
            if current.get("status") not in {s.value for s in RUNNING_STATUSES} or \
                    aware(current.get("heartbeat")) != aware(heartbeat):
                return False
        return False

    def remove(self, details: TaskExecutionDetails) -> None:
        # Row first: an entry left by a crash in between is dropped by whoever reads it (no row).
        self.s.execute("DELETE FROM taskExecutions WHERE taskId = ?", (details.task_id,))
        for phase in (WAITING, RUNNING):
            self._unschedule(phase, details)

    # ------------------------------------------------------------------ internals
    def _cas(self, cql: str, params: tuple[Any, ...]) -> tuple[bool, dict[str, Any]]:
        """Run a conditional update: (applied, current values of the condition columns when not)."""
        rows = self.s.execute(cql, params)
        row = rows[0] if rows else {}
        return bool(row.get("[applied]")), row

    def _unschedule(self, phase: str, details: TaskExecutionDetails) -> None:
        self.s.execute(SCHEDULE_REMOVE, (phase, details.submitted_date, details.task_id))


def _owned(current: dict[str, Any], node: str) -> bool:
    """Whether a not-applied owner's write failed only because the task changed running status."""
    return current.get("rannode") == node and current.get("status") in {s.value for s in RUNNING_STATUSES}


def _dump(value: dict[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value)


def _details(row: dict[str, Any]) -> TaskExecutionDetails:
    info = row["additionalinformation"]
    return TaskExecutionDetails(
        task_id=row["taskid"], type=row["type"], status=TaskStatus(row["status"]),
        submitted_date=aware(row["submitteddate"]), submitted_node=row["submittednode"],
        parameters=json.loads(row["parameters"] or "{}"), additional_information=json.loads(info) if info else None,
        started_date=aware(row["starteddate"]), completed_date=aware(row["completeddate"]),
        canceled_date=aware(row["canceleddate"]), failed_date=aware(row["faileddate"]),
        ran_node=row["rannode"], cancel_requested_node=row["cancelrequestednode"], heartbeat=aware(row["heartbeat"]))
