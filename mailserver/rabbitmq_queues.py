"""The kind of queue every RabbitMQ work queue is declared as, decided as James decides it.

James's ``RabbitMQConfiguration`` (``quorum.queues.enable``, ``quorum.queues.replication.factor``,
``quorum.queues.delivery.limit``) gives one set of arguments to every work queue of the mail queues
and the event bus (``workQueueArgumentsBuilder``), and its ``Constants.evaluate*`` force the flags a
quorum queue cannot have. A queue declared with other arguments than the side that declared it first
is refused by the broker (PRECONDITION_FAILED), so both sides must compute exactly the same.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What a node refused by PRECONDITION_FAILED on a queue's arguments tells the operator.
MIGRATION_HINT = (
    "Stop every node using this broker (mailserver and James) and run `mailserver rabbitmq migrate-queues` "
    "(a dry run listing the queues to migrate), then `mailserver rabbitmq migrate-queues --apply`: it "
    "re-declares them as configured and keeps their messages. Or configure the queue type as it was declared "
    "(MAILSERVER_QUEUE_QUORUM, MAILSERVER_QUEUE_QUORUM_REPLICATION_FACTOR, MAILSERVER_QUEUE_QUORUM_DELIVERY_LIMIT; "
    "James: quorum.queues.enable, quorum.queues.replication.factor, quorum.queues.delivery.limit)")


@dataclass(frozen=True)
class QueueType:
    quorum: bool = False
    replication_factor: int = 1
    delivery_limit: int | None = None

    def __post_init__(self) -> None:
        if self.replication_factor < 1:
            raise ValueError(f"the quorum replication factor must be positive, not {self.replication_factor}")
        if self.delivery_limit is not None and self.delivery_limit < 1:
            raise ValueError(f"the quorum delivery limit must be positive, not {self.delivery_limit}")

    def arguments(self) -> dict[str, Any]:
        """``workQueueArgumentsBuilder()``: classic ``x-queue-version: 2`` (James's default unless the
        ``fallback.classic.queues.v1`` system property), or the quorum arguments."""
        if not self.quorum:
            return {"x-queue-version": 2}
        args: dict[str, Any] = {"x-queue-type": "quorum", "x-quorum-initial-group-size": self.replication_factor}
        if self.delivery_limit is not None:
            args["x-delivery-limit"] = self.delivery_limit
        return args

    # Constants.evaluateDurable / evaluateExclusive / evaluateAutoDelete: a quorum queue is always
    # durable, never exclusive, never auto-deleted.
    def durable(self, wanted: bool) -> bool:
        return wanted or self.quorum

    def exclusive(self, wanted: bool) -> bool:
        return wanted and not self.quorum

    def auto_delete(self, wanted: bool) -> bool:
        return wanted and not self.quorum


@dataclass(frozen=True)
class BindingSpec:
    """A binding of a queue to a (durable, direct by default) exchange."""

    exchange: str
    routing_key: str = ""
    exchange_type: str = "direct"


@dataclass(frozen=True)
class QueueSpec:
    """A queue as this configuration declares it, with the bindings its topology always gives it.

    ``bindings`` are the unconditional ones: a binding that depends on the running nodes (an event-bus
    group's retry exchange) is left out, and the queue keeps whatever the broker had instead.
    """

    name: str
    arguments: dict[str, Any]
    durable: bool = True
    exclusive: bool = False
    auto_delete: bool = False
    bindings: tuple[BindingSpec, ...] = ()
