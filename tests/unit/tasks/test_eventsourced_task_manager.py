"""The task-manager contract on the event-sourced store (memory adapters), and the events it writes."""

from __future__ import annotations

import pytest

from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.tasks import james_events as je
from mailserver.tasks.api import TaskExecutionDetails, TaskStatus, information, utc_now
from mailserver.tasks.builtin.migration import CassandraMigrationTask
from mailserver.tasks.eventsourced import EventSourcedTaskStore, adopt_all
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.projection import MemoryTaskProjection
from tests.contract.task_manager_contract import WAIT, CountingTask, TaskManagerContract


def memory_store() -> EventSourcedTaskStore:
    return EventSourcedTaskStore(MemoryTaskStore(), MemoryEventStore(), MemoryTaskProjection())


class TestEventSourcedMemoryTaskManager(TaskManagerContract):
    @pytest.fixture
    def store(self):
        return memory_store()

    def test_a_completed_task_is_james_s_event_history(self, store, manager, worker, kind):
        task_id = manager.submit(CountingTask(kind, steps=2))
        with self.running(worker):
            manager.await_(task_id, WAIT)
        events = store.events.get_history(je.aggregate_id(task_id)).events
        types = [e.type for e in events]
        assert types[-1] == je.COMPLETED and events[-1].payload["result"] == "COMPLETED"
        assert events[-1].payload["additionalInformation"]["count"] == 2
        if types[0] == je.CREATED:   # not read from an update snapshot on
            assert events[0].payload == {"task": {"type": kind, "steps": 2, "pause": 0.0, "outcome": "complete",
                                                  "token": ""}, "hostname": "node-a"}
            assert types[1] == je.STARTED

    def test_a_canceled_waiting_task_records_the_request_then_the_cancel(self, store, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        manager.cancel(task_id)
        types = [e.type for e in store.events.get_history(je.aggregate_id(task_id)).events]
        assert types == [je.CREATED, je.CANCEL_REQUESTED, je.CANCELLED]

    def test_remove_forgets_events_report_and_claim(self, store, manager, kind):
        task_id = manager.submit(CountingTask(kind))
        store.remove(manager.get(task_id))
        assert store.get(task_id) is None and store.projection.get(task_id) is None
        assert store.events.get_history(je.aggregate_id(task_id)).events == ()
        assert store.claims.get(task_id) is None


def test_tasks_recorded_before_are_copied_once_as_james_s_events():
    store = memory_store()
    old = TaskManager(store.claims, "old-node")   # what an earlier version wrote: our tables only
    waiting, canceled = old.submit(CountingTask("t")), old.submit(CountingTask("t"))
    old.cancel(canceled)
    running = old.submit(CountingTask("t"))
    assert store.claims.claim(old.get(running), "old-node", utc_now())
    assert store.get(waiting) is None

    assert adopt_all(store) == (3, 0)

    for task_id in (waiting, canceled, running):
        assert store.get(task_id) == old.get(task_id)
    history = {task_id: [e.type for e in store.events.get_history(je.aggregate_id(task_id)).events]
               for task_id in (waiting, canceled, running)}
    assert history == {waiting: [je.CREATED], canceled: [je.CREATED, je.CANCEL_REQUESTED, je.CANCELLED],
                       running: [je.CREATED, je.STARTED]}
    assert adopt_all(store) == (0, 3)
    assert store.finish(running, "old-node", TaskStatus.COMPLETED, utc_now(), None)   # carries on as any task
    assert store.get(running).status is TaskStatus.COMPLETED


def test_events_hold_james_s_event_dto_and_the_report_its_webadmin_form():
    """James's migration task: ``targetVersion`` in its events, ``toVersion`` on ``/tasks/{id}``."""
    store, task = memory_store(), CassandraMigrationTask(None, 14)   # type: ignore[arg-type]
    at = utc_now()
    details = TaskExecutionDetails.waiting(task, "node-a", at)
    store.add(details)
    assert store.claim(details, "node-a", at)
    store.heartbeat(details.task_id, "node-a", at, information(task, at))
    assert store.finish(details.task_id, "node-a", TaskStatus.COMPLETED, at, information(task, at))
    events = store.events.get_history(je.aggregate_id(details.task_id)).events
    assert events[0].payload["task"] == {"type": "cassandra-migration", "targetVersion": 14}
    assert [e.payload["additionalInformation"]["targetVersion"] for e in events if e.type in (je.UPDATED, je.COMPLETED)]
    assert all("toVersion" not in e.payload.get("additionalInformation", {}) for e in events)
    report = store.get(details.task_id)
    assert report is not None and report.additional_information is not None
    assert report.additional_information["toVersion"] == 14 and "targetVersion" not in report.additional_information
