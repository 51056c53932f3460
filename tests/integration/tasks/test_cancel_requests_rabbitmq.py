"""Cancel requests on the broker, between a James node and ours: the objects James declares first, a
request published as James publishes it stopping our running task, and ours reaching James's queue.
Stores are in memory: only RabbitMQ is under test here."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pika
import pytest

from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.rabbitmq_queues import QueueType
from mailserver.tasks.api import TaskStatus
from mailserver.tasks.cancel_requests import CancelRequestListener, RabbitMQCancelRequests
from mailserver.tasks.eventsourced import EventSourcedTaskStore
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.projection import MemoryTaskProjection
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from tests.contract.task_manager_contract import WAIT, CountingTask, counting_factory, eventually
from tests.support.mailserver_process import IsolatedVhost

pytestmark = pytest.mark.integration

KIND = "counting-cancel"
EXCHANGE, ROUTING_KEY = "taskManagerCancelRequestsExchange", "taskManagerCancelRequestsRoutingKey"


@pytest.fixture
def vhost(stack) -> Iterator[IsolatedVhost]:
    with IsolatedVhost(stack, f"tasks-cancel-{uuid.uuid4().hex[:8]}") as isolated:
        yield isolated


@pytest.fixture
def james(vhost) -> Iterator[tuple[pika.adapters.blocking_connection.BlockingChannel, str]]:
    """A James node's ``listenToCancelRequests``, declared first: ours must match it exactly."""
    connection = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
    channel = connection.channel()
    queue = f"taskManagerCancelRequestsQueue{uuid.uuid4()}"
    channel.exchange_declare(EXCHANGE, exchange_type="direct", durable=False)
    channel.queue_declare(queue, durable=False, exclusive=False, auto_delete=True, arguments={"x-queue-version": 2})
    channel.queue_bind(queue, EXCHANGE, routing_key=ROUTING_KEY)
    yield channel, queue
    connection.close()


def test_cancel_requests_cross_between_james_and_our_nodes(vhost, james):
    channel, james_queue = james
    store = EventSourcedTaskStore(MemoryTaskStore(), MemoryEventStore(), MemoryTaskProjection())
    registry = TaskRegistry()
    registry.register(KIND, counting_factory(KIND))
    # No heartbeat within the test: only a request heard over RabbitMQ can stop a task.
    worker = TaskWorker(store, registry, "our-node", poll_interval=0.02, heartbeat_interval=3600.0,
                        heartbeat_timeout=7200.0, parallelism=2)
    listener = CancelRequestListener(vhost.amqp_url, QueueType(), worker.cancel)
    announced = RabbitMQCancelRequests(vhost.amqp_url)
    manager = TaskManager(store, "our-node", cancel_requests=announced)
    try:
        listener.start()
        eventually(listener.listening.is_set, what="our cancel-request queue consumed")
        ours, by_james = (manager.submit(CountingTask(KIND, steps=100_000, pause=0.01)) for _ in range(2))
        worker.start()
        eventually(lambda: worker.running_ids() == {ours, by_james}, what="both tasks running")

        # As James's RabbitMQWorkQueue.cancel: the id as body, no properties.
        channel.basic_publish(EXCHANGE, ROUTING_KEY, str(by_james).encode(), pika.BasicProperties())
        assert manager.await_(by_james, WAIT).status is TaskStatus.CANCELLED
        assert ours in worker.running_ids()
        channel.queue_purge(james_queue)   # the James request just published reached it too

        assert manager.cancel(ours) is TaskStatus.CANCEL_REQUESTED
        heard = eventually(lambda: channel.basic_get(james_queue, auto_ack=True)[2], what="request in James's queue")
        assert heard == str(ours).encode()
        assert manager.await_(ours, WAIT).status is TaskStatus.CANCELLED
    finally:
        listener.stop()
        worker.stop()
        announced.close()
