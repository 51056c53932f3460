"""The RabbitMQ objects of an event bus as data: what is declared, with which flags and arguments.

Mirrors James's ``EventDispatcher.start`` (exchange, dead-letter exchange and queue),
``GroupRegistrationHandler.start`` (the shared first-delivery queue, bound to the exchange),
``GroupRegistration.createGroupWorkQueue`` and ``GroupConsumerRetry.createRetryExchange`` (a
group's work queue, bound only to its retry exchange). Keeping them as data lets a test compare
them field by field with James's, and lets one function apply them to a channel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mailserver.events.naming import BusNames
from mailserver.events.registration_keys import RegistrationKey
from mailserver.rabbitmq_queues import QueueType

DIRECT = "direct"
EMPTY_ROUTING_KEY = ""


@dataclass(frozen=True)
class Exchange:
    name: str
    type: str = DIRECT
    durable: bool = True


@dataclass(frozen=True)
class Queue:
    name: str
    durable: bool
    exclusive: bool
    auto_delete: bool
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Binding:
    exchange: str
    queue: str
    routing_key: str = EMPTY_ROUTING_KEY


Declaration = Exchange | Queue | Binding


def _work_queue(name: str, queue_type: QueueType, dead_letter_exchange: str | None) -> Queue:
    # James: durable(evaluateDurable(DURABLE)), exclusive(evaluateExclusive(!EXCLUSIVE)),
    # autoDelete(evaluateAutoDelete(!AUTO_DELETE)), workQueueArgumentsBuilder()[.deadLetter(...)]
    arguments = queue_type.arguments()
    if dead_letter_exchange is not None:
        arguments["x-dead-letter-exchange"] = dead_letter_exchange
    return Queue(name, durable=queue_type.durable(True), exclusive=queue_type.exclusive(False),
                 auto_delete=queue_type.auto_delete(False), arguments=arguments)


def base_declarations(names: BusNames, queue_type: QueueType) -> list[Declaration]:
    """The exchanges, the dead-letter queue and the shared first-delivery queue, in James's order."""
    return [
        Exchange(names.exchange),
        Exchange(names.dead_letter_exchange),
        _work_queue(names.dead_letter_queue, queue_type, dead_letter_exchange=None),
        Binding(names.dead_letter_exchange, names.dead_letter_queue),
        _work_queue(names.shared_queue, queue_type, dead_letter_exchange=names.dead_letter_exchange),
        Binding(names.exchange, names.shared_queue),
    ]


def group_declarations(names: BusNames, queue_type: QueueType, group: str) -> list[Declaration]:
    """A group's work queue (retries only) and its retry exchange, bound together."""
    queue = names.work_queue(group)
    return [
        _work_queue(queue, queue_type, dead_letter_exchange=names.dead_letter_exchange),
        Exchange(names.retry_exchange(group)),
        Binding(names.retry_exchange(group), queue),
    ]


def registration_queue(names: BusNames, queue_type: QueueType, bus_id: str, *, durable: bool = True,
                       auto_delete: bool = True, ttl_ms: int | None = None) -> Queue:
    """A node's key queue, as ``KeyRegistrationHandler.declareQueue`` and ``KeyReconnectionHandler``.

    James: durable(evaluateDurable(notification durability, default true)), exclusive(evaluateExclusive(
    !EXCLUSIVE)), autoDelete(evaluateAutoDelete(notification.queue.autoDelete, default true)),
    workQueueArgumentsBuilder() plus ``x-expires`` when ``notification.queue.ttl`` is set; no dead-letter
    exchange (its deliveries are auto-acked).
    """
    arguments = queue_type.arguments()
    if ttl_ms is not None:
        arguments["x-expires"] = ttl_ms
    return Queue(names.registration_queue(bus_id), durable=queue_type.durable(durable),
                 exclusive=queue_type.exclusive(False), auto_delete=queue_type.auto_delete(auto_delete),
                 arguments=arguments)


def key_binding(names: BusNames, bus_id: str, key: RegistrationKey) -> Binding:
    """``RegistrationBinder``: the main exchange to the node's key queue, with the key's routing key."""
    return Binding(names.exchange, names.registration_queue(bus_id), key.routing_key)


def apply(channel: Any, declarations: list[Declaration]) -> None:
    """Declare and bind on a pika channel (idempotent when the broker holds the same objects)."""
    for d in declarations:
        if isinstance(d, Exchange):
            channel.exchange_declare(d.name, exchange_type=d.type, durable=d.durable)
        elif isinstance(d, Queue):
            channel.queue_declare(d.name, durable=d.durable, exclusive=d.exclusive, auto_delete=d.auto_delete,
                                  arguments=d.arguments)
        else:
            channel.queue_bind(d.queue, d.exchange, routing_key=d.routing_key)
