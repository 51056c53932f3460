"""The event bus declares every RabbitMQ object exactly as James does, in both queue modes.

The tables below are read from James's code (apache/james-project, master):
- event-bus/distributed/.../events/EventDispatcher.java, ``EventDispatcher.start``: the exchange and
  dead-letter exchange (durable, direct), the dead-letter queue (``workQueueArgumentsBuilder()``,
  no dead letter of its own) bound to the dead-letter exchange;
- .../events/GroupRegistrationHandler.java, ``start``: the shared queue of
  ``GroupRegistrationHandler$GroupRegistrationHandlerGroup`` with ``.deadLetter(deadLetterExchange)``,
  bound to the exchange;
- .../events/GroupRegistration.java, ``createGroupWorkQueue``, and GroupConsumerRetry.java,
  ``createRetryExchange``: a group's work queue, bound only to its retry exchange;
- .../events/KeyRegistrationHandler.java, ``declareQueue``, KeyReconnectionHandler.java,
  DefaultNamingStrategy.java (``queueName``: ``<bus>-eventbus-<eventBusId>``) and
  RegistrationBinder.java: a node's key queue (durable, not exclusive, auto-delete unless quorum,
  ``x-expires`` when a TTL is set, no dead letter), bound to the exchange with the key's routing key;
- backends-common/rabbitmq/.../RabbitMQConfiguration.java, ``workQueueArgumentsBuilder``
  (``x-queue-version: 2`` unless quorum), QueueArguments.java (the argument names) and
  Constants.java (``evaluateDurable/Exclusive/AutoDelete``: a quorum queue is durable, not
  exclusive, not auto-deleted; every queue here asks durable, not exclusive, not auto-delete).
"""

from __future__ import annotations

import pytest

from mailserver.events.declarations import (
    Binding,
    Exchange,
    Queue,
    base_declarations,
    group_declarations,
    key_binding,
    registration_queue,
)
from mailserver.events.naming import BusNames
from mailserver.events.registration_keys import RegistrationKey
from mailserver.rabbitmq_queues import QueueType

GROUP = ("org.apache.james.mailbox.opensearch.events.OpenSearchListeningMessageSearchIndex"
         "$OpenSearchListeningMessageSearchIndexGroup")
SHARED = "mailboxEvent-workQueue-org.apache.james.events.GroupRegistrationHandler$GroupRegistrationHandlerGroup"
DLX = "mailboxEvent-dead-letter-exchange"

CLASSIC = {"x-queue-version": 2}
QUORUM_3_LIMIT_5 = {"x-queue-type": "quorum", "x-quorum-initial-group-size": 3, "x-delivery-limit": 5}

# (kind, name or (exchange, queue, routing key), durable, exclusive, autoDelete, arguments without the
# dead letter, x-dead-letter-exchange or None) -- James's order.
JAMES_BASE = [
    ("exchange", "mailboxEvent-exchange", True, None, None, None, None),
    ("exchange", DLX, True, None, None, None, None),
    ("queue", "mailboxEvent-dead-letter-queue", True, False, False, "mode", None),
    ("binding", (DLX, "mailboxEvent-dead-letter-queue", ""), None, None, None, None, None),
    ("queue", SHARED, True, False, False, "mode", DLX),
    ("binding", ("mailboxEvent-exchange", SHARED, ""), None, None, None, None, None),
]
JAMES_GROUP = [
    ("queue", f"mailboxEvent-workQueue-{GROUP}", True, False, False, "mode", DLX),
    ("exchange", f"mailboxEvent-retryExchange-{GROUP}", True, None, None, None, None),
    ("binding", (f"mailboxEvent-retryExchange-{GROUP}", f"mailboxEvent-workQueue-{GROUP}", ""),
     None, None, None, None, None),
]

MODES = [
    pytest.param(QueueType(), CLASSIC, id="classic"),
    pytest.param(QueueType(quorum=True, replication_factor=3, delivery_limit=5), QUORUM_3_LIMIT_5, id="quorum"),
]


def as_row(declaration, mode_arguments):
    if isinstance(declaration, Exchange):
        assert declaration.type == "direct"
        return ("exchange", declaration.name, declaration.durable, None, None, None, None)
    if isinstance(declaration, Binding):
        return ("binding", (declaration.exchange, declaration.queue, declaration.routing_key),
                None, None, None, None, None)
    assert isinstance(declaration, Queue)
    arguments = dict(declaration.arguments)
    dead_letter = arguments.pop("x-dead-letter-exchange", None)
    return ("queue", declaration.name, declaration.durable, declaration.exclusive, declaration.auto_delete,
            "mode" if arguments == mode_arguments else arguments, dead_letter)


@pytest.mark.parametrize(("queue_type", "mode_arguments"), MODES)
def test_base_objects_are_james_s_field_by_field(queue_type, mode_arguments):
    ours = [as_row(d, mode_arguments) for d in base_declarations(BusNames(), queue_type)]
    assert ours == JAMES_BASE


@pytest.mark.parametrize(("queue_type", "mode_arguments"), MODES)
def test_group_objects_are_james_s_field_by_field(queue_type, mode_arguments):
    ours = [as_row(d, mode_arguments) for d in group_declarations(BusNames(), queue_type, GROUP)]
    assert ours == JAMES_GROUP


def test_quorum_without_delivery_limit_omits_it():
    queue = base_declarations(BusNames(), QueueType(quorum=True))[2]
    assert isinstance(queue, Queue)
    assert queue.arguments == {"x-queue-type": "quorum", "x-quorum-initial-group-size": 1}


def test_a_quorum_queue_is_always_durable_never_exclusive_nor_auto_deleted():
    quorum = QueueType(quorum=True)
    assert (quorum.durable(False), quorum.exclusive(True), quorum.auto_delete(True)) == (True, False, False)
    classic = QueueType()
    assert (classic.durable(False), classic.exclusive(True), classic.auto_delete(True)) == (False, True, True)


@pytest.mark.parametrize("bad", [{"replication_factor": 0}, {"delivery_limit": 0}])
def test_non_positive_quorum_numbers_are_refused(bad):
    with pytest.raises(ValueError):
        QueueType(quorum=True, **bad)


BUS_ID = "5a4c2e1f-0d3b-4c8a-9e7f-6b5a4c3d2e1f"


@pytest.mark.parametrize(("queue_type", "mode_arguments", "auto_delete"), [
    pytest.param(QueueType(), CLASSIC, True, id="classic"),
    pytest.param(QueueType(quorum=True, replication_factor=3, delivery_limit=5), QUORUM_3_LIMIT_5, False,
                 id="quorum"),
])
def test_a_node_key_queue_is_declared_as_james_key_registration_handler(queue_type, mode_arguments, auto_delete):
    queue = registration_queue(BusNames(), queue_type, BUS_ID)

    assert (queue.name, queue.durable, queue.exclusive, queue.auto_delete, queue.arguments) == \
        (f"mailboxEvent-eventbus-{BUS_ID}", True, False, auto_delete, mode_arguments)


def test_a_key_queue_ttl_is_x_expires():
    assert registration_queue(BusNames(), QueueType(), BUS_ID, ttl_ms=3_600_000).arguments == \
        {**CLASSIC, "x-expires": 3_600_000}


def test_a_key_is_bound_from_the_main_exchange_with_its_routing_key():
    key = RegistrationKey("MailboxIdRegistrationKey", "a1b2")

    assert key_binding(BusNames(), BUS_ID, key) == \
        Binding("mailboxEvent-exchange", f"mailboxEvent-eventbus-{BUS_ID}", "MailboxIdRegistrationKey:a1b2")
