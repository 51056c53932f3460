"""Key registrations on RabbitMQ, as James's ``KeyRegistrationHandler`` (james-runtime.md §3.5).

Each bus instance owns the queue ``<bus>-eventbus-<eventBusId>`` (durable, auto-delete, not
exclusive; James's ``KeyReconnectionHandler`` arguments) and binds it to ``<bus>-exchange`` with
the routing key of each key that has a local listener: bound when the key's first listener
registers, unbound when its last one leaves. Every node that registered a key receives the
copy published for that key and runs its listeners for it; its deliveries are auto-acked
(at most once, as James).

One connection, owned by a thread: it declares the queue, binds every registered key and
consumes. When the broker drops it, the thread reconnects and declares and binds again (the
auto-delete queue is gone by then). ``bind``/``unbind`` run on that thread; while it is
disconnected they only wait for the next connection, which binds whatever is registered then.
An event whose ``eventBusId`` header is this bus's was already given to the local key listeners
at dispatch (they are synchronous, James's default mode): its copy is ignored.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pika

from mailserver.events.declarations import Exchange, apply, key_binding, registration_queue
from mailserver.events.key_listeners import LocalKeyListeners
from mailserver.events.naming import EVENT_BUS_ID_HEADER, BusNames
from mailserver.events.reconnection import consume_until_stopped
from mailserver.events.registration_keys import RegistrationKey
from mailserver.model.events import EventDeserializationError, deserialize_events
from mailserver.rabbitmq_queues import QueueType

log = logging.getLogger(__name__)

TOPOLOGY_TIMEOUT = 10.0   # seconds a register/unregister waits for its binding (James: 1 minute, then retries)


class KeyRegistrationHandler(threading.Thread):
    def __init__(self, amqp_url: str, names: BusNames, bus_id: str, queue_type: QueueType,
                 listeners: LocalKeyListeners, concurrency: int = 10) -> None:
        super().__init__(name="event-bus-keys", daemon=True)
        self.params = pika.URLParameters(amqp_url)
        # Named, so that an operator (or a test) finds the node's key connection in the management UI.
        self.params.client_properties = {"connection_name": f"{names.bus}-eventbus-{bus_id}"}
        self.names = names
        self.bus_id = bus_id
        self.queue = registration_queue(names, queue_type, bus_id)
        self.listeners = listeners
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="key-listener")
        self.connected = threading.Event()
        self.connections = 0   # connections made so far (the first, then one per reconnection)
        # The connection whose bindings are all in place (None between connections): a change
        # tells key listeners' owners that events were lost meanwhile.
        self.epoch: int | None = None
        self._stopping = threading.Event()
        self._connection: Any = None
        self._channel: Any = None

    # -- called from any thread -------------------------------------------------------------------
    def bind(self, key: RegistrationKey) -> None:
        self._on_connection(lambda channel: apply(channel, [key_binding(self.names, self.bus_id, key)]),
                            f"bind {key.routing_key}")

    def unbind(self, key: RegistrationKey) -> None:
        binding = key_binding(self.names, self.bus_id, key)
        self._on_connection(lambda channel: channel.queue_unbind(binding.queue, binding.exchange,
                                                                 routing_key=binding.routing_key),
                            f"unbind {key.routing_key}")

    def stop(self, timeout: float = 10.0) -> None:
        self._stopping.set()
        if self.is_alive():
            self.join(timeout)
        self.pool.shutdown(wait=False, cancel_futures=True)

    def _on_connection(self, action: Any, what: str) -> None:
        """Run ``action(channel)`` on the connection's thread and wait for it (bounded)."""
        connection = self._connection
        if connection is None or not self.connected.is_set():
            log.info("event bus keys disconnected: %s waits for the next connection", what)
            return
        done = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                if self._channel is not None:
                    action(self._channel)
            except BaseException as exc:
                failure.append(exc)
                raise   # the channel is unusable: the thread reconnects, which binds every key again
            finally:
                done.set()
        try:
            connection.add_callback_threadsafe(run)
        except Exception as exc:  # closed meanwhile: the next connection does it
            log.info("event bus keys: %s deferred to the next connection (%s)", what, exc)
            return
        deadline = time.monotonic() + TOPOLOGY_TIMEOUT
        while not done.wait(0.05):
            if self._connection is not connection:
                log.info("event bus keys: connection lost before %s; the next connection does it", what)
                return
            if time.monotonic() > deadline:
                log.warning("event bus keys: %s not confirmed within %ss", what, TOPOLOGY_TIMEOUT)
                return
        if failure:
            log.warning("event bus keys: %s failed (%s); redone on reconnection", what, failure[0])

    # -- the connection's thread ------------------------------------------------------------------
    def run(self) -> None:
        # Whatever broke the connection, push must come back: every error reconnects.
        consume_until_stopped(self._consume, self._stopping, log, "event bus keys")

    def _consume(self) -> None:
        connection = pika.BlockingConnection(self.params)
        try:
            channel = connection.channel()
            apply(channel, [Exchange(self.names.exchange), self.queue])   # the exchange, as James's bus start
            channel.basic_consume(self.queue.name, self._on_message, auto_ack=True)
            self._connection, self._channel = connection, channel
            self.connections += 1
            self.connected.set()
            # After ``connected``: a key registered from now on schedules its own bind, one registered
            # before is in this list (binding twice is harmless).
            apply(channel, [key_binding(self.names, self.bus_id, key) for key in self.listeners.keys()])
            self.epoch = self.connections
            self.listeners.delivery_changed()   # after the epoch: whoever is told reads the new one
            while not self._stopping.is_set():
                connection.process_data_events(time_limit=0.25)   # bounds how long ``stop`` waits
            channel.queue_delete(self.queue.name)   # as James's stop(): the node's keys leave with it
        finally:
            self.epoch = None
            self.connected.clear()
            self.listeners.delivery_changed()
            self._connection = self._channel = None
            if connection.is_open:
                connection.close()

    def _on_message(self, channel: Any, method: Any, properties: Any, body: bytes) -> None:
        headers = properties.headers or {}
        if str(headers.get(EVENT_BUS_ID_HEADER, "")) == self.bus_id:
            return   # dispatched here: the local key listeners already ran
        try:
            key = RegistrationKey.from_routing_key(method.routing_key)
        except ValueError as exc:
            log.warning("event bus keys: ignored a delivery (%s)", exc)
            return
        if self.listeners.listeners(key):
            self.pool.submit(self._deliver, key, body)

    def _deliver(self, key: RegistrationKey, body: bytes) -> None:
        try:
            events = deserialize_events(body)
        except EventDeserializationError as exc:
            log.error("undecodable event for key %s dropped: %s", key.routing_key, exc)
            return
        for event in events:
            self.listeners.run(key, event)
