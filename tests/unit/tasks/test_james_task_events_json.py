"""Task events and task DTOs as James writes them (samples of TaskEventsSerializationTest and the tasks' tests)."""

from __future__ import annotations

import json

import pytest

from mailserver.eventsourcing.api import Event, History
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.tasks import james_events as je
from mailserver.tasks.api import TaskStatus
from mailserver.tasks.builtin.mailqueue import ClearMailQueueTask
from mailserver.tasks.builtin.migration import CassandraMigrationTask
from mailserver.tasks.james_task_json import from_james_task, to_james_task

TASK_ID = "2c7f4081-aa30-11e9-bf6c-2d3b9e84aafd"
AGGREGATE = f"Task/{TASK_ID}"
COUNTER = {"type": "memory-reference-task-with-counter", "count": 3, "timestamp": "2018-11-13T12:00:55Z"}

# (what we decide, James's serialized form), from TaskEventsSerializationTest.
SAMPLES = [
    (je.created({"type": "completed-task"}, "foo"),
     '{"task":{"type":"completed-task"},"type":"task-manager-created","aggregate":"%s","event":42,"hostname":"foo"}'),
    (je.started("foo"), '{"aggregate":"%s","event":42,"type":"task-manager-started","hostname":"foo"}'),
    (je.cancel_requested("foo"),
     '{"type":"task-manager-cancel-requested","aggregate":"%s","event":42,"hostname":"foo"}'),
    (je.terminal(TaskStatus.COMPLETED, None),
     '{"result":"COMPLETED","aggregate":"%s","event":42,"type":"task-manager-completed"}'),
    (je.terminal(TaskStatus.FAILED, None), '{"aggregate":"%s","event":42,"type":"task-manager-failed"}'),
    (je.terminal(TaskStatus.CANCELLED, None), '{"aggregate":"%s","event":42,"type":"task-manager-cancelled"}'),
    (je.terminal(TaskStatus.COMPLETED, COUNTER),
     '{"result":"COMPLETED","aggregate":"%s","event":42,"type":"task-manager-completed","additionalInformation":'
     '{"type":"memory-reference-task-with-counter","count":3,"timestamp":"2018-11-13T12:00:55Z"}}'),
    (je.terminal(TaskStatus.FAILED, COUNTER),
     '{"aggregate":"%s","event":42,"type":"task-manager-failed","additionalInformation":'
     '{"type":"memory-reference-task-with-counter","count":3,"timestamp":"2018-11-13T12:00:55Z"}}'),
    (je.terminal(TaskStatus.CANCELLED, COUNTER),
     '{"aggregate":"%s","event":42,"type":"task-manager-cancelled","additionalInformation":'
     '{"type":"memory-reference-task-with-counter","count":3,"timestamp":"2018-11-13T12:00:55Z"}}'),
]


def stored(new) -> Event:
    return Event(AGGREGATE, 42, new.type, dict(new.payload), new.snapshot)


@pytest.mark.parametrize(("decided", "james"), SAMPLES, ids=[s[0].type + str(i) for i, s in enumerate(SAMPLES)])
def test_events_are_written_as_james_serializes_them(decided, james):
    assert json.loads(je.TASK_EVENT_JSON.dumps(stored(decided))) == json.loads(james % TASK_ID)


@pytest.mark.parametrize(("decided", "james"), SAMPLES, ids=[s[0].type + str(i) for i, s in enumerate(SAMPLES)])
def test_james_s_events_read_back_as_decided(decided, james):
    assert je.TASK_EVENT_JSON.loads(AGGREGATE, 42, james % TASK_ID) == stored(decided)


def test_james_only_fields_are_kept_when_read():
    """PARTIAL results and failure messages are James's alone; reading them loses nothing."""
    failed = je.TASK_EVENT_JSON.loads(AGGREGATE, 1, json.dumps({
        "aggregate": TASK_ID, "event": 1, "type": "task-manager-failed", "errorMessage": "contextual message",
        "exception": "my exception"}))
    assert failed.payload == {"errorMessage": "contextual message", "exception": "my exception"}
    partial = je.TASK_EVENT_JSON.loads(AGGREGATE, 1, json.dumps({
        "result": "PARTIAL", "aggregate": TASK_ID, "event": 1, "type": "task-manager-completed"}))
    assert partial.payload == {"result": "PARTIAL"}


def test_progress_is_a_snapshot_with_james_s_fields():
    """AdditionalInformationUpdatedDTO: type, aggregate, event, additionalInformation; isASnapshot."""
    decided = je.updated(COUNTER)
    assert decided.snapshot
    assert json.loads(je.TASK_EVENT_JSON.dumps(stored(decided))) == {
        "type": "task-manager-updated", "aggregate": TASK_ID, "event": 42, "additionalInformation": COUNTER}


def test_clear_mail_queue_task_is_james_s_dto():
    """ClearMailQueueTaskTest: ``{"type": "clear-mail-queue", "queue": "anyQueue"}``."""
    task = ClearMailQueueTask(MemoryMailQueueFactory(), "anyQueue")
    dto = to_james_task(task.type, task.parameters())
    assert dto == json.loads('{"type": "clear-mail-queue", "queue": "anyQueue"}')
    assert from_james_task(dto) == (task.type, task.parameters())


def test_cassandra_migration_task_is_james_s_dto():
    """MigrationTaskSerializationTest: ``{"type": "cassandra-migration", "targetVersion": 12}``."""
    task = CassandraMigrationTask(None, 12)   # type: ignore[arg-type]
    dto = to_james_task(task.type, task.parameters())
    assert dto == json.loads('{"type": "cassandra-migration", "targetVersion": 12}')
    assert from_james_task(dto) == (task.type, task.parameters())


def test_absent_parameters_are_omitted_as_james_does():
    assert to_james_task("DeleteUserDataTask", {"username": "u", "fromStep": None}) == {
        "type": "DeleteUserDataTask", "username": "u"}


def test_nothing_is_appended_to_a_finished_task():
    done = History.of([Event(AGGREGATE, 0, je.CREATED, {"task": {"type": "t"}, "hostname": "n"}),
                       Event(AGGREGATE, 1, je.CANCELLED, {})])
    assert je.decide(done, je.started("n")) == [] and je.decide(done, je.cancel_requested("n")) == []
    assert je.decide(History(), je.started("n")) == []   # an unknown task
