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

from mailserver.events.api import EventBusError
from mailserver.events.declarations import Declaration, apply, base_declarations, group_declarations
from mailserver.events.naming import BusNames
from mailserver.rabbitmq_queues import MIGRATION_HINT, QueueType

log = logging.getLogger(__name__)


class TopologyMismatch(EventBusError):
    """The broker holds a queue of this bus declared with other arguments (another queue type)."""


class BusTopology:
    def __init__(self, amqp_url: str, names: BusNames | None = None, queue_type: QueueType | None = None) -> None:
        self.params = pika.URLParameters(amqp_url)
        self.names = names or BusNames()
        self.queue_type = queue_type or QueueType()

    def _channel(self) -> tuple[Any, Any]:
        connection = pika.BlockingConnection(self.params)
        return connection, connection.channel()

    def declare_base(self, channel: Any | None = None) -> None:
        """Main exchange, dead-letter exchange and queue, and the shared first-delivery queue."""
        self._with_channel(channel, self._declare_base)

    def _declare_base(self, channel: Any) -> None:
        self._apply(channel, base_declarations(self.names, self.queue_type))

    def bind_groups(self, groups: Iterable[str], channel: Any | None = None) -> None:
        """Each group's retry exchange and work queue, bound (idempotent)."""
        declarations = [d for group in groups for d in group_declarations(self.names, self.queue_type, group)]
        self._with_channel(channel, lambda ch: self._apply(ch, declarations))

    def _apply(self, channel: Any, declarations: list[Declaration]) -> None:
        try:
            apply(channel, declarations)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == 406:   # PRECONDITION_FAILED: inequivalent arguments
                raise TopologyMismatch(
                    f"RabbitMQ holds a queue of event bus {self.names.bus} declared with other arguments than "
                    f"{self.queue_type.arguments()}: {exc.reply_text}. {MIGRATION_HINT}") from exc
            raise

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
