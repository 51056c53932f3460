"""The mail queue's per-thread connections stay open through a quiet period (heartbeats serviced)."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest

from mailserver.queue.api import Outcome
from mailserver.queue.rabbitmq import DistributedMailQueueFactory
from tests.contract.mail_queue_contract import make_mail
from tests.support.amqp_idle import stay_idle_watching, vhost_connections, wait_for_connections
from tests.support.mailserver_process import IsolatedVhost

pytestmark = pytest.mark.integration

HEARTBEAT = 2   # seconds: RabbitMQ closes a silent connection after a few of these
IDLE = 4 * HEARTBEAT


@pytest.fixture
def vhost(stack) -> Iterator[IsolatedVhost]:
    with IsolatedVhost(stack, f"queue-heartbeats-{uuid.uuid4().hex[:8]}") as isolated:
        yield isolated


@pytest.fixture
def factory(vhost, cassandra, s3_blobs) -> Iterator[DistributedMailQueueFactory]:
    made = DistributedMailQueueFactory(vhost.amqp_url, cassandra, s3_blobs, heartbeat=HEARTBEAT)
    yield made
    made.close()


def pika_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name.startswith("pika") and r.levelno >= logging.ERROR]


def test_a_quiet_period_closes_no_connection_and_the_next_enqueue_needs_no_reconnect(vhost, stack, factory, caplog):
    queue = factory.get(f"quiet-{uuid.uuid4().hex[:8]}")
    queue.enqueue(make_mail())
    queue.enqueue(make_mail())
    held = queue.dequeue(timeout=10)   # worked on all through the quiet period: its ack must still go through
    assert held is not None
    connection = wait_for_connections(stack, vhost.name, 1)
    with caplog.at_level(logging.WARNING, logger="pika"):
        stay_idle_watching(stack, vhost.name, connection, IDLE)
        held.done(Outcome.SUCCESS)
        queue.enqueue(make_mail())
    assert vhost_connections(stack, vhost.name) == connection   # the same connection: no reconnect
    assert pika_errors(caplog) == []
    assert queue.size() == 2   # the one left and the new one; the held one was acknowledged, not requeued
