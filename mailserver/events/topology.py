"""Declare, bind and unbind the RabbitMQ objects of an event bus (james-runtime.md §3.2).

Queues are never deleted here: a group that left the configuration has its queue unbound from
its retry exchange, so nothing new reaches it, and whatever it holds stays for the operator
(the reconciliation procedure reports it and can move it to dead letters).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import pika
import pika.exceptions

from mailserver.events.naming import BusNames

log = logging.getLogger(__name__)


class BusTopology:
    def __init__(self, amqp_url: str, names: BusNames | None = None) -> None:
        self.params = pika.URLParameters(amqp_url)
        self.names = names or BusNames()

    def _channel(self) -> tuple[Any, Any]:
        connection = pika.BlockingConnection(self.params)
        return connection, connection.channel()

    def declare_base(self, channel: Any | None = None) -> None:
        """Main exchange, dead-letter exchange and queue, and the shared first-delivery queue."""
        self._with_channel(channel, self._declare_base)

    def _declare_base(self, channel: Any) -> None:
        n = self.names
        channel.exchange_declare(n.exchange, exchange_type="direct", durable=True)
        channel.exchange_declare(n.dead_letter_exchange, exchange_type="direct", durable=True)
        channel.queue_declare(n.dead_letter_queue, durable=True)
        channel.queue_bind(n.dead_letter_queue, n.dead_letter_exchange, routing_key="")
        channel.queue_declare(n.shared_queue, durable=True, arguments=self._queue_arguments())
        channel.queue_bind(n.shared_queue, n.exchange, routing_key="")

    def bind_groups(self, groups: Iterable[str], channel: Any | None = None) -> None:
        """Each group's retry exchange and work queue, bound (idempotent)."""
        groups = list(groups)

        def bind(ch: Any) -> None:
            for group in groups:
                exchange, queue = self.names.retry_exchange(group), self.names.work_queue(group)
                ch.exchange_declare(exchange, exchange_type="direct", durable=True)
                ch.queue_declare(queue, durable=True, arguments=self._queue_arguments())
                ch.queue_bind(queue, exchange, routing_key="")
        self._with_channel(channel, bind)

    def unbind_groups(self, groups: Iterable[str], channel: Any | None = None) -> None:
        """Unbind each group's queue from its retry exchange; the queue and its messages stay."""
        groups = list(groups)

        def unbind(ch: Any) -> None:
            for group in groups:
                try:
                    ch.queue_unbind(self.names.work_queue(group), self.names.retry_exchange(group), routing_key="")
                except pika.exceptions.ChannelClosedByBroker as exc:
                    if exc.reply_code != 404:   # no such queue or exchange: nothing bound
                        raise
                    ch = ch.connection.channel()
                log.info("event bus group %s unbound (its queue is kept)", group)
        self._with_channel(channel, unbind)

    def _queue_arguments(self) -> dict[str, Any]:
        return {"x-dead-letter-exchange": self.names.dead_letter_exchange}

    def _with_channel(self, channel: Any | None, action: Any) -> None:
        if channel is not None:
            action(channel)
            return
        connection, ch = self._channel()
        try:
            action(ch)
        finally:
            if connection.is_open:
                connection.close()
