"""Two RabbitMQ bus instances (two nodes) exchange key events through James's per-node key queues."""

from __future__ import annotations

import dataclasses
import urllib.parse

import httpx
import pika
import pytest

from mailserver.events.dead_letters import MemoryEventDeadLetters
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.registration_keys import mailbox_key
from mailserver.model.events import serialize_event
from tests.support.events import Recording, eventually, sample_added

pytestmark = pytest.mark.integration


@pytest.fixture
def nodes(vhost):
    buses = [RabbitMQEventBus(vhost.amqp_url, MemoryEventDeadLetters()) for _ in range(2)]
    yield buses
    for bus in buses:
        bus.close()


class Told(Recording):
    """Also counts the bus's notices that key delivery stopped or came back."""

    def __init__(self) -> None:
        super().__init__("")
        self.delivery_changes = 0

    def key_delivery_changed(self) -> None:
        self.delivery_changes += 1


def queue_exists(amqp_url: str, name: str) -> bool:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        connection.channel().queue_declare(name, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker:
        return False
    finally:
        if connection.is_open:
            connection.close()


def close_connection(vhost, name: str) -> None:
    """Have the broker close the named connection (as on a broker restart), once the broker lists it."""
    with httpx.Client(base_url=vhost.stack.rabbitmq_management_url, auth=(vhost.user, vhost.password),
                      timeout=10) as management:
        named: list[str] = []

        def listed() -> list[str]:
            named[:] = [c["name"] for c in management.get("/api/connections").json()
                        if c.get("client_properties", {}).get("connection_name") == name]
            return named
        eventually(listed, timeout=15)
        management.delete(f"/api/connections/{urllib.parse.quote(named[0], safe='')}").raise_for_status()


def test_an_event_dispatched_on_one_node_reaches_a_key_listener_of_another_also_after_a_reconnection(nodes, vhost):
    sender, receiver = nodes
    first, second = sample_added(), sample_added()
    listener = Told()
    registration = receiver.register_key(listener, mailbox_key(first.mailbox_id))
    assert queue_exists(vhost.amqp_url, f"mailboxEvent-eventbus-{receiver.bus_id}")

    sender.dispatch(first)

    eventually(lambda: listener.handled, timeout=5)
    assert serialize_event(listener.handled[0]) == serialize_event(first)

    assert receiver.key_delivery_epoch() == 1
    eventually(lambda: listener.delivery_changes == 1, timeout=5)   # registered first: told of the first connection
    close_connection(vhost, f"mailboxEvent-eventbus-{receiver.bus_id}")   # its auto-delete queue goes with it
    eventually(lambda: receiver.keys.connections == 2 and receiver.key_delivery_live(), timeout=10)
    # Events dispatched while it was down are lost to the key listeners: the epoch tells them.
    eventually(lambda: receiver.key_delivery_epoch() == 2, timeout=10)
    eventually(lambda: listener.delivery_changes == 3, timeout=5)   # and when it went down and came back
    sender.dispatch(dataclasses.replace(second, mailbox_id=first.mailbox_id))

    eventually(lambda: len(listener.handled) == 2, timeout=5)
    registration.unregister()
