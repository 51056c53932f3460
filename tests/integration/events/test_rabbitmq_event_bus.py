"""The RabbitMQ bus passes the event-bus contract, and keeps James's topology and guarantees."""

from __future__ import annotations

import pika
import pytest

from mailserver.events.dead_letters import MemoryEventDeadLetters
from mailserver.events.in_process import RecordingListener
from mailserver.events.naming import RETRY_COUNT_HEADER
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.retry import RetryPolicy
from mailserver.model.address import Username
from mailserver.model.events import MailboxAdded, deserialize_events
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import MailboxPath
from tests.contract.event_bus_contract import EventBusContract
from tests.support.events import eventually

pytestmark = pytest.mark.integration

FAST = RetryPolicy(max_retries=2, first_backoff=0.01, jitter_factor=0.1)
JAMES_ONLY = "org.apache.james.mailbox.spamassassin.SpamAssassinListener$SpamAssassinListenerGroup"


class TestRabbitMQEventBus(EventBusContract):
    @pytest.fixture
    def make_bus(self, vhost):
        buses: list[RabbitMQEventBus] = []

        def make(dead_letters):
            bus = RabbitMQEventBus(vhost.amqp_url, dead_letters, retry=FAST, concurrency=4)
            buses.append(bus)
            return bus
        yield make
        for bus in buses:
            bus.close()

    def start(self, bus) -> None:
        bus.start()


def test_a_first_delivery_taken_by_our_node_reaches_the_queue_of_a_group_only_james_runs(vhost):
    """James binds its group's queue to the group's retry exchange; our node hands the event on there."""
    bus = RabbitMQEventBus(vhost.amqp_url, MemoryEventDeadLetters(), retry=FAST, concurrency=2,
                           peer_groups=lambda: frozenset({JAMES_ONLY}))
    try:
        bus.topology.declare_base()
        bus.topology.bind_groups([JAMES_ONLY])   # what James's GroupRegistration.start declares
        ours = RecordingListener()
        bus.register(ours)
        bus.start()
        user = Username.of("bob@example.org")
        sent = MailboxAdded(user=user, path=MailboxPath.inbox(user), mailbox_id=MailboxId.generate())
        bus.dispatch(sent)
        connection = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
        try:
            channel, got = connection.channel(), []

            def james_queue_holds_it() -> bool:
                method, properties, body = channel.basic_get(bus.names.work_queue(JAMES_ONLY), auto_ack=True)
                if method is not None:
                    got.append((properties.headers, body))
                return bool(got)
            eventually(james_queue_holds_it, timeout=10)
        finally:
            connection.close()
        assert [e.event_id for e in ours.events] == [sent.event_id]
        [(headers, body)] = got
        assert headers == {RETRY_COUNT_HEADER: 0}
        assert [e.event_id for e in deserialize_events(body)] == [sent.event_id]
    finally:
        bus.close()
