"""James's report shape: status strings, date formats, omitted dates, additionalInformation."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from mailserver.tasks.api import (
    Result,
    Task,
    TaskExecutionDetails,
    TaskStatus,
    aware,
    format_date,
    format_instant,
    information,
)
from mailserver.tasks.registry import TaskRegistry, UnknownTaskType

AT = datetime(2024, 5, 2, 10, 15, 24, 805000, tzinfo=UTC)


class Sleepy(Task):
    type = "sleepy"

    def __init__(self, seconds: int) -> None:   # no super().__init__(): the cancel flag exists anyway
        self.seconds = seconds

    def run(self) -> Result:
        return Result.COMPLETED

    def parameters(self) -> dict:
        return {"seconds": self.seconds}

    def additional_information(self) -> dict:
        return {"seconds": self.seconds}


def test_status_wire_values_and_parsing():
    assert [s.value for s in TaskStatus] == ["waiting", "inProgress", "canceledRequested", "completed",
                                              "canceled", "failed"]
    assert TaskStatus.parse("INPROGRESS") is TaskStatus.IN_PROGRESS
    assert TaskStatus.parse("canceled") is TaskStatus.CANCELLED
    with pytest.raises(ValueError, match="Unknown status value 'cancelled'"):
        TaskStatus.parse("cancelled")
    assert {s for s in TaskStatus if s.finished} == {TaskStatus.COMPLETED, TaskStatus.CANCELLED, TaskStatus.FAILED}


def test_dates_as_james_prints_them():
    assert format_date(AT) == "2024-05-02T10:15:24.805+0000"
    paris = AT.astimezone(timezone(timedelta(hours=2)))
    assert format_date(paris) == "2024-05-02T10:15:24.805+0000"   # always reported in UTC
    assert format_instant(AT) == "2024-05-02T10:15:24.805Z"
    assert aware(datetime(2024, 5, 2)) == datetime(2024, 5, 2, tzinfo=UTC)


def test_report_of_a_waiting_task():
    task = Sleepy(3)
    details = TaskExecutionDetails.waiting(task, "james-0", AT, uuid.UUID(int=7))
    assert details.parameters == {"seconds": 3}
    assert details.to_json() == {
        "taskId": "00000000-0000-0000-0000-000000000007", "type": "sleepy", "status": "waiting",
        "submittedFrom": "james-0", "executedOn": None, "cancelledFrom": None,
        "submitDate": "2024-05-02T10:15:24.805+0000",
        "additionalInformation": {"type": "sleepy", "seconds": 3, "timestamp": "2024-05-02T10:15:24.805Z"}}


def test_report_of_finished_tasks_carries_their_dates_only():
    details = TaskExecutionDetails.waiting(Sleepy(1), "james-0", AT)
    started = details.with_status(TaskStatus.IN_PROGRESS, AT + timedelta(seconds=1), ran_node="james-2")
    done = started.with_status(TaskStatus.COMPLETED, AT + timedelta(seconds=2))
    report = done.to_json()
    assert report["executedOn"] == "james-2"
    assert (report["startedDate"], report["completedDate"]) == ("2024-05-02T10:15:25.805+0000",
                                                               "2024-05-02T10:15:26.805+0000")
    assert "failedDate" not in report and "canceledDate" not in report
    canceled = details.with_status(TaskStatus.CANCELLED, AT, cancel_requested_node="james-1").to_json()
    assert canceled["canceledDate"] == "2024-05-02T10:15:24.805+0000" and canceled["cancelledFrom"] == "james-1"


def test_tasks_without_details_report_null_information():
    class Bare(Task):
        type = "bare"

        def run(self) -> Result:
            return Result.COMPLETED

    assert information(Bare(), AT) is None
    assert TaskExecutionDetails.waiting(Bare(), "n", AT).to_json()["additionalInformation"] is None


def test_cancel_flag_is_cooperative():
    task = Sleepy(1)
    assert not task.cancel_requested
    task.cancel()
    assert task.cancel_requested


def test_registry_rebuilds_tasks_by_type():
    registry = TaskRegistry()
    registry.register("sleepy", lambda p: Sleepy(p["seconds"]))
    rebuilt = registry.create("sleepy", Sleepy(4).parameters())
    assert isinstance(rebuilt, Sleepy) and rebuilt.seconds == 4
    assert "sleepy" in registry and registry.types() == ["sleepy"]
    with pytest.raises(UnknownTaskType):
        registry.create("other", {})
