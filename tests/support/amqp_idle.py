"""Watching a RabbitMQ virtual host's connections through an idle period (management API)."""

from __future__ import annotations

import time
import urllib.parse

from include.stack.endpoints import Endpoints
from tests.support.clients import rabbitmq_management

POLL = 0.5   # seconds between two looks at the broker


def vhost_connections(stack: Endpoints, vhost: str) -> set[str]:
    """The broker's names of the connections open on ``vhost`` (``client:port -> server:port``)."""
    rows = rabbitmq_management(stack, f"/api/vhosts/{urllib.parse.quote(vhost, safe='')}/connections")
    return {row["name"] for row in rows}


def wait_for_connections(stack: Endpoints, vhost: str, count: int, timeout: float = 30.0) -> set[str]:
    """The connections of ``vhost`` once the broker lists ``count`` of them (its statistics lag a little)."""
    deadline = time.monotonic() + timeout
    while True:
        names = vhost_connections(stack, vhost)
        if len(names) == count:
            return names
        assert time.monotonic() < deadline, f"the broker lists {sorted(names)} on {vhost}, expected {count}"
        time.sleep(POLL)


def stay_idle_watching(stack: Endpoints, vhost: str, expected: set[str], seconds: float) -> None:
    """Let the client stay idle for ``seconds`` while checking that the broker keeps every connection of
    ``expected`` open all along (a connection missing its heartbeats is closed by the broker)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        names = vhost_connections(stack, vhost)
        assert names == expected, f"the broker closed {sorted(expected - names)} while the client was idle"
        time.sleep(POLL)
