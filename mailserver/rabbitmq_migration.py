"""Re-declare RabbitMQ queues with other arguments without losing their messages.

A queue's arguments cannot change once declared: the broker refuses another declaration
(PRECONDITION_FAILED) until the queue is deleted. A migration therefore moves the messages out to
a temporary queue, deletes the queue, declares it as wanted and moves the messages back:

1. declare the temporary queue ``mailserver-upgrade-<queue>`` (durable, classic) and bind it as the
   queue is bound, so that what is routed meanwhile (a delay queue's expired mail) is not dropped;
   those bindings also record the old ones for the steps after the queue is gone;
2. move every message to it (below), then delete the queue, only if empty and unused;
3. declare the queue as wanted, bind it as its specification says plus as it was bound before,
   unbind the temporary queue, move the messages back, delete the temporary queue (only if empty).

A move takes one message with ``basic.get``, publishes a copy (body and properties) through the
default exchange on a channel with publisher confirms, and acks the original only once the copy is
confirmed. Every step is idempotent and the state is read from the broker, so a run interrupted at
any point is finished by the next one. Delivery is at least once: a crash between a copy's confirm
and the original's ack leaves that message in both queues (one duplicate per interruption), and a
message routed while the temporary queue shares the queue's bindings is kept twice. Nothing is lost.

Refused while a consumer is attached to a queue to migrate: the nodes (ours and James's) must be
stopped, or they would take messages in the middle of the move or declare the queue behind it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pika
import pika.exceptions

from mailserver.rabbitmq_management import RabbitMQManagement
from mailserver.rabbitmq_queues import QueueSpec

log = logging.getLogger(__name__)

TEMPORARY_PREFIX = "mailserver-upgrade-"
DELIVERY_COUNT_HEADER = "x-delivery-count"
# Classic whatever the vhost's default queue type: its deletes are guarded (if-empty, if-unused).
TEMPORARY_ARGUMENTS = {"x-queue-type": "classic"}
_MAX_NAME_BYTES = 255
# Quorum and stream queues do not implement queue.delete's if-empty / if-unused.
_UNGUARDED_DELETE_TYPES = frozenset({"quorum", "stream"})


def temporary_queue(name: str) -> str:
    """The temporary queue of ``name`` (a digest when the name would pass AMQP's 255 bytes)."""
    candidate = TEMPORARY_PREFIX + name
    if len(candidate.encode()) <= _MAX_NAME_BYTES:
        return candidate
    return TEMPORARY_PREFIX + hashlib.sha256(name.encode()).hexdigest()


class ConsumersAttached(Exception):
    """A queue to migrate has consumers: the nodes using it must be stopped first."""


@dataclass(frozen=True)
class Pending:
    """A queue whose broker declaration differs from its specification, or whose migration was interrupted."""

    spec: QueueSpec
    exists: bool
    current: dict[str, Any] | None      # the broker's arguments, None when the queue is absent
    messages: int                       # ready messages in the queue and its temporary queue
    consumers: int
    interrupted: bool                   # its temporary queue exists

    def describe(self) -> str:
        state = "interrupted migration, " if self.interrupted else ""
        current = "absent" if self.current is None else self.current
        return (f"{self.spec.name}: {state}{self.messages} messages, {self.consumers} consumers\n"
                f"    current arguments: {current}\n    wanted arguments:  {self.spec.arguments}")


def _declared_as(record: Mapping[str, Any], spec: QueueSpec) -> bool:
    return (dict(record.get("arguments") or {}) == spec.arguments
            and bool(record.get("durable")) == spec.durable
            and bool(record.get("exclusive")) == spec.exclusive
            and bool(record.get("auto_delete")) == spec.auto_delete)


class QueueMigration:
    """Finds and migrates the queues of one vhost (AMQP for the messages, the management API for the rest)."""

    def __init__(self, amqp_url: str, management: RabbitMQManagement) -> None:
        self.params = pika.URLParameters(amqp_url)
        self.management = management

    # -- finding ------------------------------------------------------------------------------
    def present(self) -> set[str]:
        """Names of the queues of the vhost, plus those whose migration was interrupted after their deletion."""
        names = set(self.management.queue_names())
        return names | {n[len(TEMPORARY_PREFIX):] for n in names if n.startswith(TEMPORARY_PREFIX)}

    def pending(self, specs: Iterable[QueueSpec]) -> list[Pending]:
        """The queues among ``specs`` to migrate: declared otherwise, or with an interrupted migration."""
        records = {r["name"]: r for r in self.management.queues(
            columns=("name", "arguments", "durable", "exclusive", "auto_delete"))}
        found = []
        connection = pika.BlockingConnection(self.params)
        try:
            channel = connection.channel()
            for spec in specs:
                record = records.get(spec.name)
                interrupted = temporary_queue(spec.name) in records
                if not interrupted and (record is None or _declared_as(record, spec)):
                    continue
                messages = consumers = 0
                for queue in (spec.name, temporary_queue(spec.name)):
                    if queue in records:
                        channel, count = self._count(connection, channel, queue)
                        messages, consumers = messages + count[0], consumers + count[1]
                current = None if record is None else dict(record.get("arguments") or {})
                found.append(Pending(spec, record is not None, current, messages, consumers, interrupted))
        finally:
            connection.close()
        return found

    @staticmethod
    def _count(connection: Any, channel: Any, queue: str) -> tuple[Any, tuple[int, int]]:
        """Ready messages and consumers, exact (AMQP), unlike the management statistics that lag."""
        try:
            ok = channel.queue_declare(queue, passive=True).method
            return channel, (ok.message_count, ok.consumer_count)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != 404:   # deleted since the listing
                raise
            return connection.channel(), (0, 0)

    # -- migrating ----------------------------------------------------------------------------
    def migrate(self, pending: list[Pending]) -> None:
        """Migrate each queue; refused, before any change, while any of them has consumers."""
        busy = [p for p in pending if p.consumers]
        if busy:
            raise ConsumersAttached(
                "consumers are attached to " + ", ".join(f"{p.spec.name} ({p.consumers})" for p in busy)
                + ": stop every node using this broker (mailserver and James) and run again")
        for p in pending:
            self.migrate_one(p.spec)

    def migrate_one(self, spec: QueueSpec) -> int:
        """Migrate one queue (idempotent, resumes an interrupted run); the messages moved back."""
        temporary = temporary_queue(spec.name)
        connection = pika.BlockingConnection(self.params)
        try:
            record = self.management.queue(spec.name)
            if record is not None and not _declared_as(record, spec):
                channel = self._confirming(connection)
                channel.queue_declare(temporary, durable=True, arguments=TEMPORARY_ARGUMENTS)
                for b in self._bindings(spec.name):
                    channel.queue_bind(temporary, b["source"], routing_key=b["routing_key"],
                                       arguments=b.get("arguments") or None)
                moved = self._move(channel, spec.name, temporary)
                self._delete(channel, spec.name, str(record.get("type") or "classic"))
                log.info("queue %s: %d messages moved to %s, queue deleted", spec.name, moved, temporary)
                # A new channel for the queue of the same name: RabbitMQ 3.10's channel keeps the state of
                # the deleted queue's type and crashes (INTERNAL_ERROR) on a quorum queue re-declared classic.
                channel.close()
            elif self.management.queue(temporary) is None:
                return 0   # declared as wanted, nothing left over
            channel = self._confirming(connection)
            self._declare(channel, spec)
            recorded = self._bindings(temporary)
            for wanted in spec.bindings:
                channel.exchange_declare(wanted.exchange, exchange_type=wanted.exchange_type, durable=True)
                channel.queue_bind(spec.name, wanted.exchange, routing_key=wanted.routing_key)
            for b in recorded:
                channel.queue_bind(spec.name, b["source"], routing_key=b["routing_key"],
                                   arguments=b.get("arguments") or None)
            for b in recorded:
                channel.queue_unbind(temporary, b["source"], routing_key=b["routing_key"],
                                     arguments=b.get("arguments") or None)
            moved = self._move(channel, temporary, spec.name)
            channel.queue_delete(temporary, if_unused=True, if_empty=True)
            log.info("queue %s: declared with %s, %d messages moved back", spec.name, spec.arguments, moved)
            return moved
        finally:
            if connection.is_open:
                connection.close()

    @staticmethod
    def _confirming(connection: Any) -> Any:
        channel = connection.channel()
        channel.confirm_delivery()
        return channel

    def _bindings(self, queue: str) -> list[dict[str, Any]]:
        """The queue's bindings but the default exchange's (implicit)."""
        path = f"/api/queues/{quote(self.management.vhost, safe='')}/{quote(queue, safe='')}/bindings"
        return [b for b in self.management.get(path) if b.get("source")]

    @staticmethod
    def _declare(channel: Any, spec: QueueSpec) -> None:
        channel.queue_declare(spec.name, durable=spec.durable, exclusive=spec.exclusive,
                              auto_delete=spec.auto_delete, arguments=spec.arguments)

    @staticmethod
    def _move(channel: Any, source: str, target: str) -> int:
        """Every message of ``source`` into ``target``: each original acked once its copy is confirmed."""
        moved = 0
        while True:
            method, properties, body = channel.basic_get(source, auto_ack=False)
            if method is None:
                return moved
            if properties.headers:   # the quorum source's delivery count: the broker's, not the publisher's
                properties.headers.pop(DELIVERY_COUNT_HEADER, None)
            # confirm_delivery: returns once the broker confirmed, raises if it refused or could not route.
            channel.basic_publish("", target, body, properties, mandatory=True)
            channel.basic_ack(method.delivery_tag)
            moved += 1

    @staticmethod
    def _delete(channel: Any, queue: str, queue_type: str) -> None:
        if queue_type not in _UNGUARDED_DELETE_TYPES:
            channel.queue_delete(queue, if_unused=True, if_empty=True)
            return
        ok = channel.queue_declare(queue, passive=True).method
        if ok.message_count or ok.consumer_count:
            raise ConsumersAttached(f"queue {queue} got {ok.consumer_count} consumers or {ok.message_count} "
                                    "messages while it was emptied: stop every node using this broker")
        channel.queue_delete(queue)

