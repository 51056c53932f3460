"""A RabbitMQ virtual host per test: the bus's James names never meet another bus's queues."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.support.mailserver_process import IsolatedVhost


@pytest.fixture
def vhost(stack) -> Iterator[IsolatedVhost]:
    with IsolatedVhost(stack, f"events-{uuid.uuid4().hex[:8]}") as isolated:
        yield isolated
