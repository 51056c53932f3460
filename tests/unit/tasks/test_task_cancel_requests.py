"""Cancel requests between our nodes and James's: the RabbitMQ objects as James declares them, the
manager announcing a cancel, a worker stopping a task it hears of, and a James cancel event read at
the heartbeat (in-memory stores; the broker side is tests/integration/tasks/test_cancel_requests_rabbitmq.py)."""

from __future__ import annotations

import uuid

import pytest

from mailserver.events.declarations import Binding, Exchange, Queue
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.rabbitmq_queues import QueueType
from mailserver.tasks.api import TaskStatus
from mailserver.tasks.cancel_requests import (
    CancelRequestListener,
    CancelRequests,
    cancel_binding,
    cancel_exchange,
    cancel_queue,
    cancel_queue_name,
    parse_cancel_request,
)
from mailserver.tasks.eventsourced import EventSourcedTaskStore
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.projection import MemoryTaskProjection
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from tests.contract.task_manager_contract import WAIT, CountingTask, counting_factory, eventually

KIND = "counting-cancel"
SLOW = {"poll_interval": 0.02, "heartbeat_interval": 3600.0, "heartbeat_timeout": 7200.0}   # no beat in a test
BEATING = {"poll_interval": 0.02, "heartbeat_interval": 0.05, "heartbeat_timeout": WAIT}


class RecordingCancelRequests(CancelRequests):
    def __init__(self, fail: bool = False) -> None:
        self.published: list[uuid.UUID] = []
        self.fail = fail

    def publish(self, task_id: uuid.UUID) -> None:
        if self.fail:
            raise ConnectionError("broker down")
        self.published.append(task_id)

    def close(self) -> None:
        pass


@pytest.fixture
def store() -> EventSourcedTaskStore:
    return EventSourcedTaskStore(MemoryTaskStore(), MemoryEventStore(), MemoryTaskProjection())


def james_node(store: EventSourcedTaskStore) -> TaskManager:
    """A James node's view: the same events and report, none of our claims."""
    return TaskManager(EventSourcedTaskStore(MemoryTaskStore(), store.events, store.projection), "james-node")


def worker_of(store: EventSourcedTaskStore, **timing: float) -> TaskWorker:
    registry = TaskRegistry()
    registry.register(KIND, counting_factory(KIND))
    return TaskWorker(store, registry, "node-a", **timing)


def started(manager: TaskManager, worker: TaskWorker) -> uuid.UUID:
    task_id = manager.submit(CountingTask(KIND, steps=100_000, pause=0.01))
    worker.start()
    eventually(lambda: task_id in worker.running_ids(), what="task running")
    return task_id


def test_objects_are_declared_as_james_declares_them():
    name = cancel_queue_name()
    assert name.startswith("taskManagerCancelRequestsQueue") and uuid.UUID(name.removeprefix(
        "taskManagerCancelRequestsQueue"))
    assert cancel_exchange() == Exchange("taskManagerCancelRequestsExchange", "direct", durable=False)
    assert cancel_queue(name, QueueType()) == Queue(name, durable=False, exclusive=False, auto_delete=True,
                                                    arguments={"x-queue-version": 2})
    quorum = cancel_queue(name, QueueType(quorum=True, replication_factor=3))
    assert (quorum.durable, quorum.auto_delete, quorum.arguments["x-queue-type"]) == (True, False, "quorum")
    assert cancel_binding(name) == Binding("taskManagerCancelRequestsExchange", name,
                                           "taskManagerCancelRequestsRoutingKey")


def test_a_request_body_is_the_task_id():
    task_id = uuid.uuid4()
    assert parse_cancel_request(str(task_id).encode()) == task_id
    assert parse_cancel_request(b"not a task") is None
    assert parse_cancel_request(b"\xff\xfe") is None


def test_canceling_a_running_task_publishes_its_id(store):
    announced = RecordingCancelRequests()
    manager = TaskManager(store, "node-a", cancel_requests=announced)
    waiting = manager.submit(CountingTask(KIND))
    assert manager.cancel(waiting) is TaskStatus.CANCELLED
    assert announced.published == []   # canceled at once: no worker to tell
    worker = worker_of(store, **SLOW)
    try:
        task_id = started(manager, worker)
        assert manager.cancel(task_id) is TaskStatus.CANCEL_REQUESTED
        assert announced.published == [task_id]
    finally:
        worker.stop()


def test_a_failed_publish_still_records_the_request(store):
    manager = TaskManager(store, "node-a", cancel_requests=RecordingCancelRequests(fail=True))
    worker = worker_of(store, **SLOW)
    try:
        task_id = started(manager, worker)
        assert manager.cancel(task_id) is TaskStatus.CANCEL_REQUESTED
        assert manager.get(task_id).status is TaskStatus.CANCEL_REQUESTED
    finally:
        worker.stop()


def test_a_heard_request_stops_the_task_this_worker_runs(store):
    manager = TaskManager(store, "node-a")
    worker = worker_of(store, **SLOW)   # no heartbeat during the test: only the request can stop it
    canceled: list[uuid.UUID] = []
    listener = CancelRequestListener("amqp://guest:guest@localhost/", QueueType(),
                                     lambda task_id: canceled.append(task_id) or worker.cancel(task_id))
    try:
        task_id = started(manager, worker)
        james_node(store).cancel(task_id)   # a James node: the event, then its message
        listener.on_delivery(b"not a task id")
        listener.on_delivery(str(uuid.uuid4()).encode())   # a task of another node: nothing here
        listener.on_delivery(str(task_id).encode())
        details = manager.await_(task_id, WAIT)
    finally:
        worker.stop()
    assert details.status is TaskStatus.CANCELLED and details.cancel_requested_node == "james-node"
    assert len(canceled) == 2 and canceled[1] == task_id


def test_worker_cancel_is_false_for_a_task_it_does_not_run(store):
    assert worker_of(store, **SLOW).cancel(uuid.uuid4()) is False


def test_a_james_cancel_event_is_noticed_at_the_heartbeat(store):
    manager = TaskManager(store, "node-a")
    worker = worker_of(store, **BEATING)
    try:
        task_id = started(manager, worker)
        assert james_node(store).cancel(task_id) is TaskStatus.CANCEL_REQUESTED
        details = manager.await_(task_id, WAIT)
    finally:
        worker.stop()
    assert details.status is TaskStatus.CANCELLED and details.cancel_requested_node == "james-node"
    assert store.claims.get(task_id).status is TaskStatus.CANCELLED
