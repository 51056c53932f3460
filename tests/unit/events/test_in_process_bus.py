"""The in-process bus passes the event-bus contract (synchronously)."""

from __future__ import annotations

import pytest

from mailserver.events.in_process import InProcessEventBus
from tests.contract.event_bus_contract import EventBusContract


class TestInProcessEventBus(EventBusContract):
    @pytest.fixture
    def make_bus(self):
        return lambda dead_letters: InProcessEventBus(retries=self.max_retries, dead_letters=dead_letters)
