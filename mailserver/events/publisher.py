"""Confirmed, persistent publishing to RabbitMQ from any thread.

pika's ``BlockingConnection`` is not thread-safe, so the publisher keeps a small pool of
connections, each with one channel in confirm mode, and lends one to a thread per publish: the
number of connections stays bounded whatever the number of threads that dispatch events. A
publish returns only once the broker confirmed it; a nack is retried (James retries twice, 100 ms
apart), a dead connection is replaced once, anything else raises ``PublishError``.

Connections waiting in the pool have their heartbeats serviced by a ``HeartbeatKeeper``, so the
broker does not close them during a quiet period (each link's lock is held while it publishes).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pika
import pika.exceptions as px
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_fixed

from mailserver.amqp_heartbeats import HeartbeatKeeper

log = logging.getLogger(__name__)

DEFAULT_HEARTBEAT = 60   # seconds; RabbitMQ's default, stated so that the keeper knows the timeout
CONNECTION_ERRORS = (px.AMQPConnectionError, px.ConnectionWrongStateError, px.StreamLostError,
                     px.ChannelClosed, px.ChannelWrongStateError, ConnectionError, OSError)


class PublishError(Exception):
    """The broker did not take the message (unreachable, nacked, unroutable)."""


class _Link:
    def __init__(self, params: pika.URLParameters) -> None:
        self.lock = threading.Lock()   # held while publishing: the heartbeat keeper skips the link meanwhile
        self.connection = pika.BlockingConnection(params)
        self.channel = self.connection.channel()
        self.channel.confirm_delivery()

    def usable(self) -> bool:
        return self.connection.is_open and self.channel.is_open

    def close(self) -> None:
        try:
            with self.lock:   # not while the heartbeat keeper is servicing it
                if self.connection.is_open:
                    self.connection.close()
        except Exception:  # already gone: nothing to release
            log.debug("closing an AMQP connection failed", exc_info=True)


def _publish_confirmed(link: _Link, exchange: str, routing_key: str, data: bytes, properties: Any,
                       mandatory: bool) -> None:
    with link.lock:
        link.channel.basic_publish(exchange, routing_key, data, properties, mandatory=mandatory)


class ConfirmingPublisher:
    def __init__(self, amqp_url: str, *, connections: int = 4, nack_retries: int = 2,
                 heartbeat: int = DEFAULT_HEARTBEAT,
                 open_link: Callable[[pika.URLParameters], _Link] = _Link) -> None:
        """``heartbeat``: the timeout asked of the broker (seconds), unless the URL sets one.

        ``open_link``: how a pooled link (a connection and its confirming channel) is opened; given to
        publish through a stand-in broker.
        """
        if connections < 1:
            raise ValueError("a publisher needs at least one connection")
        self.params = pika.URLParameters(amqp_url)
        if self.params.heartbeat is None:
            self.params.heartbeat = heartbeat
        # A URL gives a number of seconds (pika's parameters also accept a negotiation callback).
        timeout = self.params.heartbeat if isinstance(self.params.heartbeat, int) else None
        self._keeper = HeartbeatKeeper(timeout, name="amqp-publisher-heartbeats")
        self.nack_retries = nack_retries
        self._open_link = open_link
        self._free: queue.LifoQueue[_Link | None] = queue.LifoQueue()
        for _ in range(connections):
            self._free.put(None)     # opened lazily, on first use
        self._all: list[_Link] = []
        self._lock = threading.Lock()
        self._closed = False
        # Built once: a tenacity decorator made per publish cost more CPU than the publish's own framing.
        self._confirmed = retry(retry=retry_if_exception_type(px.NackError), stop=stop_after_attempt(nack_retries + 1),
                                wait=wait_fixed(0.1), reraise=True)(_publish_confirmed)

    def publish(self, exchange: str, routing_key: str, body: bytes | str,
                headers: Mapping[str, Any] | None = None, *, mandatory: bool = True) -> None:
        """Persistent, ``text/plain`` as James; returns once confirmed by the broker."""
        if self._closed:
            raise PublishError("the publisher is closed")
        properties = pika.BasicProperties(delivery_mode=pika.DeliveryMode.Persistent, content_type="text/plain",
                                          headers=dict(headers) if headers else None)
        data = body.encode() if isinstance(body, str) else body
        link: _Link | None = self._borrow()
        try:
            for attempt in (1, 2):
                try:
                    if link is None:
                        link = self._open()
                    self._confirmed(link, exchange, routing_key, data, properties, mandatory)
                    return
                except px.UnroutableError as exc:
                    raise PublishError(f"unroutable: no queue bound to {exchange!r} with key {routing_key!r}") from exc
                except px.NackError as exc:
                    raise PublishError(f"nacked by the broker ({exchange!r})") from exc
                except CONNECTION_ERRORS as exc:
                    # The broker restarted or dropped us: one fresh connection, one more try.
                    if link is not None:
                        self._discard(link)
                        link = None
                    if attempt == 2:
                        raise PublishError(f"RabbitMQ unreachable: {type(exc).__name__}: {exc}") from exc
        finally:
            self._free.put(link if link is not None and link.usable() else None)

    def _borrow(self) -> _Link | None:
        """A pooled link, or None when its connection must be (re)opened by the caller."""
        link = self._free.get()
        if link is not None and not link.usable():
            self._discard(link)
            return None
        return link

    def _open(self) -> _Link:
        link = self._open_link(self.params)
        with self._lock:
            self._all.append(link)
        self._keeper.add(link)
        return link

    def _discard(self, link: _Link) -> None:
        self._keeper.discard(link)
        with self._lock:
            if link in self._all:
                self._all.remove(link)
        link.close()

    def close(self) -> None:
        self._closed = True
        self._keeper.close()
        with self._lock:
            links, self._all = self._all, []
        for link in links:
            link.close()
