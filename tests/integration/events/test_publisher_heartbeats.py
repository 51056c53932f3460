"""The event bus's pooled publishing connections stay open through a quiet period (heartbeats serviced)."""

from __future__ import annotations

import logging

import pika
import pytest

from mailserver.events.publisher import ConfirmingPublisher
from tests.support.amqp_idle import stay_idle_watching, vhost_connections, wait_for_connections

pytestmark = pytest.mark.integration

HEARTBEAT = 2   # seconds: RabbitMQ closes a silent connection after a few of these
IDLE = 4 * HEARTBEAT
QUEUE = "heartbeat-probe"


def test_an_idle_pooled_connection_is_kept_and_publishes_again_without_error(vhost, stack, caplog):
    setup = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
    setup.channel().queue_declare(QUEUE, durable=True)
    setup.close()
    wait_for_connections(stack, vhost.name, 0)
    publisher = ConfirmingPublisher(vhost.amqp_url, connections=1, heartbeat=HEARTBEAT)
    try:
        publisher.publish("", QUEUE, b"before the quiet period")
        pooled = wait_for_connections(stack, vhost.name, 1)
        with caplog.at_level(logging.WARNING, logger="pika"):
            stay_idle_watching(stack, vhost.name, pooled, IDLE)
            publisher.publish("", QUEUE, b"after the quiet period")
        assert vhost_connections(stack, vhost.name) == pooled   # the same connection: no reconnect
        assert [r.getMessage() for r in caplog.records if r.name.startswith("pika") and r.levelno >= logging.ERROR] \
            == []
    finally:
        publisher.close()
    check = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
    try:
        assert check.channel().queue_declare(QUEUE, passive=True).method.message_count == 2
    finally:
        check.close()
