"""``TaskProjection`` on James's ``taskExecutionDetailsProjection`` table.

Dates are James's ``zonedDateTime`` values (an instant and a zone id; ours are written in UTC);
``additionalInformation`` is the JSON James's ``JsonTaskAdditionalInformationSerializer`` writes.
A save is a plain insert of the whole record, as in James (absent columns are left unset); a
replace is a lightweight transaction on the status that was read.
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from mailserver.cassandra.session import CassandraSession
from mailserver.tasks.api import TaskExecutionDetails, TaskStatus, aware
from mailserver.tasks.projection import TaskProjection, projected

UTC_ZONE = "UTC"
COLUMNS = ("taskId, type, status, additionalInformation, submittedNode, ranNode, cancelRequestedNode, "
           "submittedDate, startedDate, completedDate, canceledDate, failedDate")
SELECT_ONE = f"SELECT {COLUMNS} FROM taskExecutionDetailsProjection WHERE taskId = ?"
SELECT_ALL = f"SELECT {COLUMNS} FROM taskExecutionDetailsProjection"
DELETE = "DELETE FROM taskExecutionDetailsProjection WHERE taskId = ?"
DATES = (("submittedDate", "submitted_date"), ("startedDate", "started_date"), ("completedDate", "completed_date"),
         ("canceledDate", "canceled_date"), ("failedDate", "failed_date"))
TEXTS = (("ranNode", "ran_node"), ("cancelRequestedNode", "cancel_requested_node"))


class CassandraTaskProjection(TaskProjection):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def get(self, task_id: uuid.UUID) -> TaskExecutionDetails | None:
        row = self.s.one(SELECT_ONE, (task_id,))
        return details_of(row) if row else None

    def list(self) -> list[TaskExecutionDetails]:
        return [details_of(row) for row in self.s.execute(SELECT_ALL)]

    def save(self, details: TaskExecutionDetails) -> None:
        columns = {name: value for name, value in _columns(details).items() if value is not None}
        columns["taskId"] = details.task_id
        self.s.execute(f"INSERT INTO taskExecutionDetailsProjection ({', '.join(columns)}) "
                       f"VALUES ({', '.join('?' for _ in columns)})", tuple(columns.values()))

    def replace(self, read: TaskExecutionDetails, new: TaskExecutionDetails) -> bool:
        columns = _columns(new)
        applied, _ = self.s.execute_cas(
            f"UPDATE taskExecutionDetailsProjection SET {', '.join(f'{c} = ?' for c in columns)} "
            "WHERE taskId = ? IF status = ?", (*columns.values(), read.task_id, read.status.value))
        return applied

    def remove(self, task_id: uuid.UUID) -> None:
        self.s.execute(DELETE, (task_id,))


def _columns(details: TaskExecutionDetails) -> dict[str, Any]:
    """Every column but the key (None for an absent value)."""
    info = details.additional_information
    columns: dict[str, Any] = {"type": details.type, "status": details.status.value,
                               "submittedNode": details.submitted_node,
                               "additionalInformation": None if info is None else json.dumps(info)}
    columns.update({column: getattr(details, name) for column, name in TEXTS})
    columns.update({column: None if getattr(details, name) is None else zoned(getattr(details, name))
                    for column, name in DATES})
    return columns


def zoned(value: datetime) -> tuple[datetime, str]:
    """A ``zonedDateTime`` bound positionally (``date``, ``timeZone``): the UDT is not registered with the driver."""
    return value, UTC_ZONE


def _instant(value: Any) -> datetime | None:
    """The instant of a ``zonedDateTime`` (its zone only changes how James prints it)."""
    return None if value is None else aware(value[0])


def details_of(row: dict[str, Any]) -> TaskExecutionDetails:
    info = row["additionalinformation"]
    submitted = _instant(row["submitteddate"])
    if submitted is None:
        raise ValueError(f"projection row of task {row['taskid']} has no submittedDate")
    return projected(TaskExecutionDetails(
        task_id=row["taskid"], type=row["type"], status=TaskStatus.parse(row["status"]), submitted_date=submitted,
        submitted_node=row["submittednode"], additional_information=json.loads(info) if info else None,
        started_date=_instant(row["starteddate"]), completed_date=_instant(row["completeddate"]),
        canceled_date=_instant(row["canceleddate"]), failed_date=_instant(row["faileddate"]),
        ran_node=row["rannode"], cancel_requested_node=row["cancelrequestednode"]))
