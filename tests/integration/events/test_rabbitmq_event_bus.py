"""The RabbitMQ bus passes the event-bus contract, and keeps James's topology and guarantees."""

from __future__ import annotations

import pytest

from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.retry import RetryPolicy
from tests.contract.event_bus_contract import EventBusContract

pytestmark = pytest.mark.integration

FAST = RetryPolicy(max_retries=2, first_backoff=0.01, jitter_factor=0.1)


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
