"""Cancel requests over RabbitMQ, as James's ``RabbitMQWorkQueue`` sends and hears them.

A James node that cancels a task publishes its id (the UTF-8 body, no properties) to the
exchange ``taskManagerCancelRequestsExchange`` with the routing key
``taskManagerCancelRequestsRoutingKey``; every worker node binds a queue of its own,
``taskManagerCancelRequestsQueue<uuid>``, with that key, so each hears every request and stops
the task if it runs it. The objects are declared exactly as James declares them (a broker refuses
a second declaration with other flags): the exchange with reactor-rabbitmq's defaults (direct,
not durable, not auto-deleted), the queue not durable, auto-deleted, not exclusive, with
``workQueueArgumentsBuilder()``'s arguments (a quorum queue forces durable and not auto-deleted,
as ``Constants.evaluate*``). Deliveries are auto-acked: a request heard by no worker is lost,
as in James; the request is also recorded as an event, which our workers read at their heartbeat.
"""

from __future__ import annotations

import logging
import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import pika
from tenacity import retry, stop_after_attempt, wait_exponential

from mailserver.events.declarations import Binding, Exchange, Queue, apply
from mailserver.events.publisher import ConfirmingPublisher, PublishError
from mailserver.events.reconnection import consume_until_stopped
from mailserver.rabbitmq_queues import QueueType

log = logging.getLogger(__name__)

CANCEL_REQUESTS_EXCHANGE = "taskManagerCancelRequestsExchange"
CANCEL_REQUESTS_ROUTING_KEY = "taskManagerCancelRequestsRoutingKey"
CANCEL_REQUESTS_QUEUE_PREFIX = "taskManagerCancelRequestsQueue"

# James: NUM_RETRIES = 8, FIRST_BACKOFF = 100 ms for its task-queue declarations.
DECLARE_ATTEMPTS = 8


def cancel_exchange() -> Exchange:
    """``ExchangeSpecification.exchange(name)``: direct, not durable (reactor-rabbitmq's defaults)."""
    return Exchange(CANCEL_REQUESTS_EXCHANGE, type="direct", durable=False)


def cancel_queue_name() -> str:
    """``CancelRequestQueueName.generate()``: one queue per node and start."""
    return f"{CANCEL_REQUESTS_QUEUE_PREFIX}{uuid.uuid4()}"


def cancel_queue(name: str, queue_type: QueueType) -> Queue:
    """``listenToCancelRequests``: durable(evaluateDurable(!DURABLE)), autoDelete(evaluateAutoDelete(
    AUTO_DELETE)), not exclusive, ``workQueueArgumentsBuilder()`` (no ``notification.queue.ttl`` here)."""
    return Queue(name, durable=queue_type.durable(False), exclusive=False, auto_delete=queue_type.auto_delete(True),
                 arguments=queue_type.arguments())


def cancel_binding(queue: str) -> Binding:
    return Binding(CANCEL_REQUESTS_EXCHANGE, queue, CANCEL_REQUESTS_ROUTING_KEY)


def parse_cancel_request(body: bytes) -> uuid.UUID | None:
    """The task id of a request (James's ``TaskId.fromString`` of the body); None when it is not one."""
    try:
        return uuid.UUID(body.decode("utf-8").strip())
    except (UnicodeDecodeError, ValueError):
        return None


class CancelRequests(ABC):
    """Where a node announces that a running task should stop, to every worker node."""

    @abstractmethod
    def publish(self, task_id: uuid.UUID) -> None:
        """Tell every worker; raises ``PublishError`` when the broker did not take it."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""


class RabbitMQCancelRequests(CancelRequests):
    """Publishes to James's exchange, declaring it first (it is not durable: a broker restart loses it)."""

    def __init__(self, amqp_url: str, *, publisher: ConfirmingPublisher | None = None) -> None:
        self.amqp_url = amqp_url
        self.publisher = publisher or ConfirmingPublisher(amqp_url, connections=1)
        self._declared = False
        self._lock = threading.Lock()

    def publish(self, task_id: uuid.UUID) -> None:
        self._declare_once()
        try:
            self._send(task_id)
        except PublishError:
            # The exchange may be gone with a broker restart: declare it again, then one more try.
            self._declare()
            self._send(task_id)

    def _send(self, task_id: uuid.UUID) -> None:
        # Not mandatory: with no worker node listening, the request has no one to reach (as James).
        self.publisher.publish(CANCEL_REQUESTS_EXCHANGE, CANCEL_REQUESTS_ROUTING_KEY, str(task_id), mandatory=False)

    def _declare_once(self) -> None:
        with self._lock:
            if not self._declared:
                self._declare()
                self._declared = True

    @retry(stop=stop_after_attempt(DECLARE_ATTEMPTS), wait=wait_exponential(multiplier=0.1, max=5), reraise=True)
    def _declare(self) -> None:
        connection = pika.BlockingConnection(pika.URLParameters(self.amqp_url))
        try:
            apply(connection.channel(), [cancel_exchange()])
        finally:
            if connection.is_open:
                connection.close()

    def close(self) -> None:
        self.publisher.close()


class CancelRequestListener(threading.Thread):
    """A worker node's queue of cancel requests, consumed until ``stop`` (reconnecting when lost).

    ``on_cancel`` is called with each requested task id, on this thread: it must be quick.
    """

    def __init__(self, amqp_url: str, queue_type: QueueType, on_cancel: Callable[[uuid.UUID], object],
                 queue_name: str | None = None) -> None:
        super().__init__(name="task-cancel-requests", daemon=True)
        self.params = pika.URLParameters(amqp_url)
        self.queue = cancel_queue(queue_name or cancel_queue_name(), queue_type)
        self.params.client_properties = {"connection_name": self.queue.name}
        self.on_cancel = on_cancel
        self.listening = threading.Event()   # set while the queue is bound and consumed
        self._stopping = threading.Event()

    def run(self) -> None:
        consume_until_stopped(self._consume, self._stopping, log, "task cancel requests")

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout)

    def on_delivery(self, body: bytes) -> None:
        """One request: the task is stopped if this node runs it; a malformed body is dropped."""
        task_id = parse_cancel_request(body)
        if task_id is None:
            log.warning("ignored a cancel request that is no task id: %r", body[:100])
            return
        try:
            self.on_cancel(task_id)
        except Exception:
            log.exception("cancelling task %s failed", task_id)

    def _consume(self) -> None:
        connection = pika.BlockingConnection(self.params)
        try:
            channel = connection.channel()
            apply(channel, [cancel_exchange(), self.queue, cancel_binding(self.queue.name)])
            channel.basic_consume(self.queue.name, self._on_message, auto_ack=True)
            self.listening.set()
            while not self._stopping.is_set():
                connection.process_data_events(time_limit=0.25)   # bounds how long ``stop`` waits
            channel.queue_delete(self.queue.name)   # as James's close(); auto-delete would also remove it
        finally:
            self.listening.clear()
            if connection.is_open:
                connection.close()

    def _on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        self.on_delivery(body)
