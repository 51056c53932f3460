"""Our event bus and James's declare the same RabbitMQ objects: whichever declares first, the other
starts without PRECONDITION_FAILED, in classic and in quorum mode.

``declare_as_james`` replays James's declarations with pika, written from James's code
(EventDispatcher.start, GroupRegistrationHandler.start, GroupRegistration.createGroupWorkQueue,
GroupConsumerRetry.createRetryExchange, RabbitMQConfiguration.workQueueArgumentsBuilder), not from ours.
"""

from __future__ import annotations

import urllib.parse

import pika
import pytest

from mailserver.events.dead_letters import MemoryEventDeadLetters
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.topology import TopologyMismatch
from mailserver.rabbitmq_queues import QueueType
from tests.contract.event_bus_contract import group
from tests.support.clients import rabbitmq_management
from tests.support.events import Recording, eventually, sample_added

pytestmark = pytest.mark.integration

SHARED_GROUP = "org.apache.james.events.GroupRegistrationHandler$GroupRegistrationHandlerGroup"
MODES = [pytest.param(False, id="classic"), pytest.param(True, id="quorum")]


def james_arguments(quorum: bool) -> dict:
    if quorum:   # quorum.queues.enable=true, replication.factor=1, delivery.limit=5
        return {"x-queue-type": "quorum", "x-quorum-initial-group-size": 1, "x-delivery-limit": 5}
    return {"x-queue-version": 2}


def our_queue_type(quorum: bool) -> QueueType:
    return QueueType(quorum=True, replication_factor=1, delivery_limit=5) if quorum else QueueType()


def declare_as_james(amqp_url: str, quorum: bool, groups: list[str]) -> None:
    work = james_arguments(quorum)
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        ch = connection.channel()
        ch.exchange_declare("mailboxEvent-exchange", exchange_type="direct", durable=True)
        ch.exchange_declare("mailboxEvent-dead-letter-exchange", exchange_type="direct", durable=True)
        ch.queue_declare("mailboxEvent-dead-letter-queue", durable=True, exclusive=False, auto_delete=False,
                         arguments=work)
        ch.queue_bind("mailboxEvent-dead-letter-queue", "mailboxEvent-dead-letter-exchange", routing_key="")
        with_dead_letter = {**work, "x-dead-letter-exchange": "mailboxEvent-dead-letter-exchange"}
        for name in [SHARED_GROUP, *groups]:
            ch.queue_declare(f"mailboxEvent-workQueue-{name}", durable=True, exclusive=False, auto_delete=False,
                             arguments=with_dead_letter)
        ch.queue_bind(f"mailboxEvent-workQueue-{SHARED_GROUP}", "mailboxEvent-exchange", routing_key="")
        for name in groups:
            ch.exchange_declare(f"mailboxEvent-retryExchange-{name}", exchange_type="direct", durable=True)
            ch.queue_bind(f"mailboxEvent-workQueue-{name}", f"mailboxEvent-retryExchange-{name}", routing_key="")
    finally:
        connection.close()


@pytest.fixture
def buses():
    made: list[RabbitMQEventBus] = []
    yield made
    for bus in made:
        bus.close()


def started_bus(vhost, buses, quorum: bool, listener: Recording) -> RabbitMQEventBus:
    bus = RabbitMQEventBus(vhost.amqp_url, MemoryEventDeadLetters(), concurrency=2,
                           queue_type=our_queue_type(quorum))
    buses.append(bus)
    bus.register(listener)
    bus.start()
    return bus


@pytest.mark.parametrize("quorum", MODES)
def test_our_bus_starts_on_james_s_objects(vhost, buses, quorum):
    listener = Recording(group("Shared"))
    declare_as_james(vhost.amqp_url, quorum, [listener.group])

    bus = started_bus(vhost, buses, quorum, listener)
    event = sample_added(uid=1)
    bus.dispatch(event)

    eventually(lambda: listener.handled)
    assert [e.event_id for e in listener.handled] == [event.event_id]


@pytest.mark.parametrize("quorum", MODES)
def test_james_declares_over_our_bus_s_objects(vhost, buses, quorum):
    listener = Recording(group("Shared"))
    started_bus(vhost, buses, quorum, listener)

    declare_as_james(vhost.amqp_url, quorum, [listener.group])   # raises on PRECONDITION_FAILED

    queues = {q["name"]: q for q in rabbitmq_management(
        vhost.stack, f"/api/queues/{urllib.parse.quote(vhost.name, safe='')}")}
    dead_letter = {"x-dead-letter-exchange": "mailboxEvent-dead-letter-exchange"}
    expected = {"mailboxEvent-dead-letter-queue": james_arguments(quorum),
                f"mailboxEvent-workQueue-{SHARED_GROUP}": {**james_arguments(quorum), **dead_letter},
                f"mailboxEvent-workQueue-{listener.group}": {**james_arguments(quorum), **dead_letter}}
    assert {name: queues[name]["arguments"] for name in expected} == expected
    assert all((queues[name]["durable"], queues[name]["exclusive"], queues[name]["auto_delete"])
               == (True, False, False) for name in expected)


def test_another_queue_type_than_james_s_is_refused_with_the_settings_to_change(vhost, buses):
    listener = Recording(group("Other"))
    declare_as_james(vhost.amqp_url, True, [listener.group])

    with pytest.raises(TopologyMismatch, match=r"mailserver rabbitmq migrate-queues.*MAILSERVER_QUEUE_QUORUM"):
        started_bus(vhost, buses, False, listener)
