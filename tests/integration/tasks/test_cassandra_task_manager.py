"""The task-manager contract on Cassandra (the event-sourced store nodes use), and the rows it leaves."""

from __future__ import annotations

import json

import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.tasks import james_events as je
from mailserver.tasks.api import TaskStatus, utc_now
from mailserver.tasks.cassandra import CassandraTaskStore
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.wiring import cassandra_task_store
from tests.contract.task_manager_contract import CountingTask, TaskManagerContract

pytestmark = pytest.mark.integration


class TestCassandraTaskManager(TaskManagerContract):
    @pytest.fixture
    def store(self, cassandra):
        return cassandra_task_store(cassandra)

    def test_row_layout(self, store, manager, cassandra, kind):
        task_id = manager.submit(CountingTask(kind, steps=2))
        row = cassandra.one("SELECT type, status, parameters, submittedNode, submittedDate, heartbeat "
                            "FROM taskExecutions WHERE taskId = ?", (task_id,))
        assert (row["type"], row["status"], row["submittednode"]) == (kind, "waiting", "node-a")
        assert '"steps": 2' in row["parameters"] and row["heartbeat"] is None

    def test_schedule_entries_follow_the_task(self, store, manager, cassandra, kind):
        task_id = manager.submit(CountingTask(kind))

        def entries(phase: str) -> list:
            return [r for r in cassandra.execute("SELECT taskId FROM taskSchedule WHERE phase = ?", (phase,))
                    if r["taskid"] == task_id]

        assert len(entries("waiting")) == 1 and entries("running") == []
        assert [d.task_id for d in store.waiting(10_000)].count(task_id) == 1
        assert store.claim(manager.get(task_id), "node-x", utc_now())
        assert entries("waiting") == [] and len(entries("running")) == 1
        assert any(d.task_id == task_id for d in store.running())
        assert store.finish(task_id, "node-x", TaskStatus.COMPLETED, utc_now(), None)
        assert all(d.task_id != task_id for d in store.running())   # reading drops the finished entry
        assert entries("running") == []

    def test_canceled_waiting_entries_are_dropped_when_read(self, store, manager, cassandra, kind):
        task_id = manager.submit(CountingTask(kind))
        manager.cancel(task_id)
        assert all(d.task_id != task_id for d in store.waiting(10_000))
        rows = cassandra.execute("SELECT taskId FROM taskSchedule WHERE phase = 'waiting'")
        assert all(r["taskid"] != task_id for r in rows)

    def test_a_task_is_visible_from_another_session(self, store, manager, cassandra_config, kind):
        task_id = manager.submit(CountingTask(kind))
        with CassandraSession.connect(cassandra_config) as other:
            remote = TaskManager(cassandra_task_store(other), "node-z")
            assert remote.get(task_id).status is TaskStatus.WAITING
            assert remote.cancel(task_id) is TaskStatus.CANCELLED
        assert manager.get(task_id).cancel_requested_node == "node-z"

    def test_remove_forgets_the_row_and_its_schedule_entries(self, store, manager, cassandra, kind):
        """What the tasks cleanup (``DELETE /tasks?olderThan=``) relies on."""
        waiting = manager.get(manager.submit(CountingTask(kind)))
        claimed = manager.get(manager.submit(CountingTask(kind)))
        assert store.claim(claimed, "node-x", utc_now())
        for details in (waiting, claimed):
            store.remove(details)
            assert store.get(details.task_id) is None
            rows = cassandra.execute("SELECT taskId FROM taskSchedule WHERE phase IN ('waiting', 'running')")
            assert all(r["taskid"] != details.task_id for r in rows)
        store.remove(waiting)   # already gone: no error
        gone = cassandra.execute("SELECT aggregateId FROM eventStore WHERE aggregateId = ?",
                                 (je.aggregate_id(claimed.task_id),))
        assert gone == [] and cassandra.one("SELECT taskId FROM taskExecutionDetailsProjection WHERE taskId = ?",
                                            (claimed.task_id,)) is None

    def test_events_and_projection_rows_have_james_s_shape(self, store, manager, cassandra, kind):
        task_id = manager.submit(CountingTask(kind, steps=2))
        manager.cancel(task_id)
        rows = cassandra.execute("SELECT eventId, event FROM eventStore WHERE aggregateId = ?",
                                 (f"Task/{task_id}",))
        events = [json.loads(r["event"]) for r in rows]
        assert events[0] == {"type": "task-manager-created", "aggregate": str(task_id), "event": 0,
                             "task": {"type": kind, "steps": 2, "pause": 0.0, "outcome": "complete", "token": ""},
                             "hostname": "node-a"}
        assert events[1] == {"type": "task-manager-cancel-requested", "aggregate": str(task_id), "event": 1,
                             "hostname": "node-a"}
        assert events[2]["type"] == "task-manager-cancelled" and events[2]["additionalInformation"]["count"] == 0
        row = cassandra.one("SELECT status, submittedNode, cancelRequestedNode, submittedDate, canceledDate, "
                            "additionalInformation FROM taskExecutionDetailsProjection WHERE taskId = ?", (task_id,))
        assert (row["status"], row["submittednode"], row["cancelrequestednode"]) == ("canceled", "node-a", "node-a")
        assert row["submitteddate"][1] == "UTC" and row["canceleddate"][0] is not None
        assert json.loads(row["additionalinformation"])["type"] == kind

    def test_a_task_recorded_before_is_copied_into_james_s_tables(self, store, cassandra, kind):
        old = TaskManager(CassandraTaskStore(cassandra), "old-node")   # an earlier version: taskExecutions only
        task_id = old.submit(CountingTask(kind))
        assert store.get(task_id) is None
        assert store.adopt(old.get(task_id)) and not store.adopt(old.get(task_id))
        assert store.get(task_id) == old.get(task_id)
        event = cassandra.one("SELECT event FROM eventStore WHERE aggregateId = ?", (f"Task/{task_id}",))
        assert json.loads(event["event"])["type"] == "task-manager-created"
        assert store.request_cancel(task_id, "node-a", utc_now()) is TaskStatus.CANCELLED
