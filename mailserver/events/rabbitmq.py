"""The mailbox event bus on RabbitMQ, as James's distributed bus (james-runtime.md §3.3-3.4).

* ``dispatch`` publishes each event (James's JSON, persistent, confirmed) to ``mailboxEvent-exchange``
  with the empty routing key, which reaches the shared queue. Any process dispatches; only
  processes that ``start()`` consume. A publish that fails stores the event under the bus's
  dispatching-failure group in the dead letters (redelivering it dispatches it to every group
  again) and, unless ``propagate_dispatch_error``, the mailbox operation goes on: the event is
  safe in Cassandra and nothing half-done is left to the caller.
* Consumption is pushed (``basic_consume`` with a prefetch), never polled. A first delivery runs
  every group registered in this process, and is handed on, ``retry-count`` 0, to the retry exchange
  of every group another node runs (``peer_groups``, see ``peer_groups.py``): this node never
  acknowledges a first delivery on behalf of a group it does not run. A failing group is retried
  through its own retry exchange and queue with ``retry-count`` + 1, waiting James's exponential
  backoff, then ends in the dead letters. A message is acknowledged only once every group ran (or
  was retried or dead-lettered), so a process killed mid-event leaves it to be delivered again:
  listeners are idempotent, or record what they applied in the same write (the current-quota
  listener does).
* Key listeners (``register_key``) run on every process that registered their key: dispatch runs
  this process's at once, then publishes one more copy per key of the event with the key's routing
  key, which reaches the other processes' key queues (``rabbitmq_keys``). A failed key copy is
  logged: the group publication decides the outcome of ``dispatch``.
* An undecodable body is rejected without requeue: the broker moves it to the bus's dead-letter
  queue, where it waits for an operator.
"""

from __future__ import annotations

import functools
import logging
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pika
import pika.exceptions as px

from mailserver.events.api import EventBus, EventBusError, EventListener, Registration
from mailserver.events.dead_letters import EventDeadLetters
from mailserver.events.key_listeners import KeyRegistration, LocalKeyListeners
from mailserver.events.naming import EVENT_BUS_ID_HEADER, RETRY_COUNT_HEADER, BusNames
from mailserver.events.publisher import ConfirmingPublisher, PublishError
from mailserver.events.rabbitmq_keys import KeyRegistrationHandler
from mailserver.events.reconnection import consume_until_stopped
from mailserver.events.registration_keys import RegistrationKey, keys_of
from mailserver.events.retry import RetryPolicy
from mailserver.events.topology import BusTopology
from mailserver.model.events import EventDeserializationError, MailboxEvent, deserialize_events, serialize_event
from mailserver.observability.metrics import Metrics
from mailserver.rabbitmq_queues import QueueType

log = logging.getLogger(__name__)


class RabbitMQEventBus(EventBus):
    def __init__(self, amqp_url: str, dead_letters: EventDeadLetters, *, names: BusNames | None = None,
                 retry: RetryPolicy | None = None, concurrency: int = 10, publisher_connections: int = 4,
                 propagate_dispatch_error: bool = False, metrics: Metrics | None = None,
                 queue_type: QueueType | None = None,
                 peer_groups: Callable[[], frozenset[str]] | None = None) -> None:
        self.amqp_url = amqp_url
        self.names = names or BusNames()
        self.dead_letters = dead_letters
        self.retry = retry or RetryPolicy()
        self.concurrency = concurrency
        self.propagate_dispatch_error = propagate_dispatch_error
        self.metrics = metrics
        self.bus_id = str(uuid.uuid4())
        self.queue_type = queue_type or QueueType()
        self.topology = BusTopology(amqp_url, self.names, self.queue_type)
        self.publisher = ConfirmingPublisher(amqp_url, connections=publisher_connections)
        self.peer_groups = peer_groups   # groups other nodes run; None: every node runs the same groups
        self.listeners: dict[str, EventListener] = {}
        self._declared = False
        self._consumer: _Consumer | None = None
        self.key_listeners = LocalKeyListeners()
        self._keys: KeyRegistrationHandler | None = None
        self._keys_lock = threading.Lock()

    # -- registration -----------------------------------------------------------------------------
    def register(self, listener: EventListener) -> None:
        if not listener.group:
            raise ValueError(f"{type(listener).__name__} has no group")
        if listener.group in self.listeners:
            raise ValueError(f"a listener of group {listener.group!r} is already registered")
        if self._consumer is not None:
            raise RuntimeError("register listeners before the bus starts consuming")
        self.listeners[listener.group] = listener

    def unregister(self, group: str) -> None:
        if self._consumer is not None:
            raise RuntimeError("unregister listeners before the bus starts consuming")
        self.listeners.pop(group, None)

    @property
    def groups(self) -> list[str]:
        return list(self.listeners)

    # -- key registrations ------------------------------------------------------------------------
    def register_key(self, listener: EventListener, key: RegistrationKey) -> Registration:
        if self.key_listeners.add(key, listener):
            self.keys.bind(key)

        def unregister() -> None:
            if self.key_listeners.remove(key, listener):
                self.keys.unbind(key)
        return KeyRegistration(unregister)

    @property
    def keys(self) -> KeyRegistrationHandler:
        """This process's key queue and its consumer, started with the first key registration."""
        with self._keys_lock:
            if self._keys is None:
                self._keys = KeyRegistrationHandler(self.amqp_url, self.names, self.bus_id, self.queue_type,
                                                    self.key_listeners, self.concurrency)
                self._keys.start()
                started = self._keys
            else:
                return self._keys
        if not started.connected.wait(5.0):
            log.warning("event bus keys not connected yet: key listeners get other nodes' events once it is")
        return started

    def key_delivery_live(self) -> bool:
        return self._keys is not None and self._keys.connected.is_set()

    def key_delivery_epoch(self) -> int | None:
        keys = self._keys
        return keys.epoch if keys is not None else None

    # -- dispatch ---------------------------------------------------------------------------------
    def declare(self) -> None:
        """The bus's exchanges and shared queue (idempotent; done once per process, lazily)."""
        self.topology.declare_base()
        self._declared = True

    def dispatch(self, *events: MailboxEvent) -> None:
        for event in events:
            keys = keys_of(event)
            for key in keys:
                self.key_listeners.run(key, event)
            body = serialize_event(event)
            self._publish_or_keep(event, body)
            for key in keys:
                self._publish_key_copy(event, body, key)

    def dispatch_to_keys(self, *events: MailboxEvent) -> None:
        for event in events:
            keys = keys_of(event)
            for key in keys:
                self.key_listeners.run(key, event)
            body = serialize_event(event)
            if keys and not self._declared:
                try:
                    self.declare()   # the exchange; the shared queue stays empty (nothing goes to groups)
                except Exception as exc:
                    log.warning("event bus %s not declared: %s", self.names.bus, exc)
            for key in keys:
                self._publish_key_copy(event, body, key)

    def _publish_key_copy(self, event: MailboxEvent, body: str, key: RegistrationKey) -> None:
        """The copy for the nodes that registered ``key`` (not mandatory: often none did)."""
        try:
            self.publisher.publish(self.names.exchange, key.routing_key, body,
                                   {EVENT_BUS_ID_HEADER: self.bus_id}, mandatory=False)
        except Exception as exc:  # key listeners elsewhere miss it; IMAP's fallback poll still sees it
            log.warning("key copy of %s %s for %s not published: %s", event.type_name, event.event_id,
                        key.routing_key, exc)

    def _publish_or_keep(self, event: MailboxEvent, body: str) -> None:
        try:
            if not self._declared:
                self.declare()
            self.publisher.publish(self.names.exchange, "", body, {EVENT_BUS_ID_HEADER: self.bus_id})
            return
        except Exception as exc:  # the broker's failure must not lose the event
            failure = exc
        log.error("dispatching %s %s failed (%s): kept as a dead letter of %s", event.type_name, event.event_id,
                  failure, self.names.dispatching_failure_group)
        try:
            self.dead_letters.store_json(self.names.dispatching_failure_group, body)
        except Exception as exc:
            raise EventBusError(f"event {event.event_id} could neither be published ({failure}) "
                                f"nor kept as a dead letter ({exc})") from exc
        if self.propagate_dispatch_error:
            raise EventBusError(f"event {event.event_id} could not be published: {failure}") from failure

    # -- redelivery (WebAdmin, DAG) ---------------------------------------------------------------
    def redeliver(self, group: str, event_json: str) -> None:
        """Publish a dead letter again: a group's retry path with count 0, or to every group."""
        if group == self.names.dispatching_failure_group:
            self.publisher.publish(self.names.exchange, "", event_json, {EVENT_BUS_ID_HEADER: self.bus_id})
        else:
            self.publisher.publish(self.names.retry_exchange(group), "", event_json, {RETRY_COUNT_HEADER: 0})

    # -- consumption ------------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> None:
        """Declare this process's groups and consume the shared queue and their retry queues.

        Returns once the consumers are registered with the broker.
        """
        if self._consumer is not None:
            return
        self.declare()
        self.topology.bind_groups(self.listeners)
        self._consumer = _Consumer(self)
        self._consumer.start()
        if not self._consumer.ready.wait(timeout):
            self.stop()
            raise EventBusError(f"the event bus consumers did not start within {timeout}s")

    def stop(self, timeout: float = 30.0) -> None:
        if self._consumer is not None:
            self._consumer.stop(timeout)
            self._consumer = None

    def close(self) -> None:
        self.stop()
        if self._keys is not None:
            self._keys.stop()
            self._keys = None
        self.publisher.close()

    def consuming(self) -> bool:
        return self._consumer is not None and self._consumer.is_alive()

    def handle_delivery(self, body: bytes, retry_group: str | None, retry_count: int) -> None:
        """Run the groups a delivery is for. Raises ``EventDeserializationError`` for a poison body."""
        events = deserialize_events(body)
        if retry_group is None:
            targets = list(self.listeners.values())
        else:
            listener = self.listeners.get(retry_group)
            targets = [listener] if listener is not None else []
        for event in events:
            for listener in targets:
                if listener.accepts(event):
                    self._run_reliably(listener, event, retry_count)
        if retry_group is None:
            for group in self.groups_handed_on():
                for event in events:
                    self._hand_on(group, event)

    def groups_handed_on(self) -> list[str]:
        """Groups another node runs and this one does not: they get each first delivery this node takes."""
        if self.peer_groups is None:
            return []
        return sorted(g for g in self.peer_groups() if g not in self.listeners)

    def _hand_on(self, group: str, event: MailboxEvent) -> None:
        """To the group's own queue (count 0: run at once), or its dead letters, as a failed retry in James."""
        try:
            self.publisher.publish(self.names.retry_exchange(group), "", serialize_event(event),
                                   {RETRY_COUNT_HEADER: 0})
            return
        except PublishError as exc:
            log.error("event %s %s could not be handed on to group %s (%s): dead-lettered", event.type_name,
                      event.event_id, group, exc)
        self.dead_letters.store(group, event)

    def _run_reliably(self, listener: EventListener, event: MailboxEvent, retry_count: int) -> None:
        try:
            self._timed(listener, event)
            return
        except Exception as exc:  # any listener failure is retried, then dead-lettered
            log.warning("listener group %s failed on %s %s (attempt %d): %s", listener.group, event.type_name,
                        event.event_id, retry_count + 1, exc, exc_info=retry_count >= self.retry.max_retries)
        if retry_count < self.retry.max_retries:
            try:
                self.publisher.publish(self.names.retry_exchange(listener.group), "", serialize_event(event),
                                       {RETRY_COUNT_HEADER: retry_count + 1})
                return
            except PublishError as exc:
                log.error("retry of %s for %s could not be published (%s): dead-lettered now",
                          event.event_id, listener.group, exc)
        self.dead_letters.store(listener.group, event)
        log.error("event %s %s dead-lettered for group %s", event.type_name, event.event_id, listener.group)

    def _timed(self, listener: EventListener, event: MailboxEvent) -> None:
        if self.metrics is None:
            listener.handle(event)
            return
        with self.metrics.timed(f"mailbox-listener-{type(listener).__name__}"):
            listener.handle(event)


class _Consumer(threading.Thread):
    """One connection whose I/O loop receives deliveries; listeners run on a bounded pool.

    Acks go back through ``add_callback_threadsafe`` (the connection belongs to this thread),
    several per wake-up (``_Replies``). On stop, consumers are cancelled first, in-flight work
    finishes and is acked, then the connection closes (prefetched, unstarted messages go back to
    their queue).
    """

    def __init__(self, bus: RabbitMQEventBus) -> None:
        super().__init__(name="event-bus-consumer", daemon=True)
        self.bus = bus
        self.pool = ThreadPoolExecutor(max_workers=bus.concurrency, thread_name_prefix="event-listener")
        self._stopping = threading.Event()
        self._in_flight = 0
        self._lock = threading.Lock()
        self.replies: _Replies | None = None   # the acks of the current connection
        self.ready = threading.Event()

    def run(self) -> None:
        consume_until_stopped(self._consume, self._stopping, log, "event bus consumer", lost=(px.AMQPError, OSError))
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _consume(self) -> None:
        bus = self.bus
        connection = pika.BlockingConnection(pika.URLParameters(bus.amqp_url))
        self.replies = _Replies(connection)   # before any delivery can arrive on it
        try:
            channel = connection.channel()
            channel.basic_qos(prefetch_count=bus.concurrency)
            bus.topology.declare_base(channel)
            bus.topology.bind_groups(bus.listeners, channel)
            tags = [channel.basic_consume(bus.names.shared_queue, functools.partial(self._on_message, None))]
            for group in bus.listeners:
                tags.append(channel.basic_consume(bus.names.work_queue(group),
                                                  functools.partial(self._on_message, group)))
            self.ready.set()
            while not self._stopping.is_set():
                connection.process_data_events(time_limit=1)
            for tag in tags:
                channel.basic_cancel(tag)
            self._drain(connection)
        finally:
            self.ready.clear()
            if connection.is_open:
                connection.close()

    def _drain(self, connection: Any, timeout: float = 30.0) -> None:
        """Let in-flight listeners finish so their acks go out before the connection closes."""
        waited = 0.0
        while waited < timeout:
            with self._lock:
                if self._in_flight == 0:
                    break
            connection.process_data_events(time_limit=0.1)
            waited += 0.1
        connection.process_data_events(time_limit=0)

    def _on_message(self, retry_group: str | None, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        headers = properties.headers or {}
        try:
            retry_count = int(headers.get(RETRY_COUNT_HEADER, 0)) if retry_group is not None else 0
        except (TypeError, ValueError):
            retry_count = 0
        with self._lock:
            self._in_flight += 1
        assert self.replies is not None   # set before the first delivery, on this thread
        self.pool.submit(self._work, self.replies, channel, method.delivery_tag, retry_group, retry_count, body)

    def _work(self, replies: _Replies, channel: Any, tag: int, retry_group: str | None, retry_count: int,
              body: bytes) -> None:
        try:
            # James waits in-process before a retry; the stop event cuts the wait short (the message
            # is then left unacknowledged and comes back to a consumer later).
            if self._stopping.wait(self.bus.retry.delay(retry_count)):
                return
            if self._stopping.is_set():
                return
            try:
                self.bus.handle_delivery(body, retry_group, retry_count)
            except EventDeserializationError as exc:
                log.error("undecodable event bus message rejected to %s: %s", self.bus.names.dead_letter_queue, exc)
                replies.send(functools.partial(channel.basic_nack, tag, requeue=False))
                return
            except Exception:   # e.g. dead letters unreachable: give the message back, lose nothing
                log.exception("event bus delivery failed; requeued")
                self._stopping.wait(1.0)
                replies.send(functools.partial(channel.basic_nack, tag, requeue=True))
                return
            replies.send(functools.partial(channel.basic_ack, tag))
        finally:
            with self._lock:
                self._in_flight -= 1

    def stop(self, timeout: float) -> None:
        self._stopping.set()
        self.join(timeout)


class _Replies:
    """Acks and nacks of one connection, sent by its I/O thread, several per wake-up.

    A listener thread cannot use the channel (pika connections are not thread-safe), so each
    reply was a callback handed to the connection's thread: a wake-up of that thread per message
    (issue 16). Replies now queue here and one callback sends all that are queued when it runs;
    another is scheduled only when none is pending. A reply queued for a connection that died is
    dropped: the broker gives its unacknowledged messages to a consumer again.
    """

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self._lock = threading.Lock()
        self._queued: list[Callable[[], None]] = []
        self._scheduled = False

    def send(self, action: Callable[[], None]) -> None:
        with self._lock:
            self._queued.append(action)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self.connection.add_callback_threadsafe(self._send_queued)
        except Exception:  # the connection died: the broker requeued the messages already
            with self._lock:
                self._scheduled = False
                self._queued.clear()
            log.warning("connection closed before ack: the message will be delivered again")

    def _send_queued(self) -> None:
        with self._lock:
            actions, self._queued = self._queued, []
            self._scheduled = False
        for action in actions:
            try:
                action()
            except (px.ChannelClosed, px.ChannelWrongStateError, px.ConnectionClosed):
                log.warning("ack/nack on a closed channel: the broker delivers the message again")
