"""``RabbitMQ backend`` health on the stack's broker: one connection kept across probes, replaced
when the broker drops it, closed with the runner."""

from __future__ import annotations

import base64
import threading
import time
import urllib.parse
import urllib.request
import uuid

import pytest

from mailserver.observability.checks import RabbitMQHealthCheck
from mailserver.observability.health import HealthCheckRunner, Status
from tests.support.clients import amqp_parameters, rabbitmq_management

pytestmark = pytest.mark.integration


def _connections_named(stack, name: str, expected: int, timeout: float = 15.0,
                       unless: str | None = None) -> list[dict]:
    """The broker's connections with client-provided name ``name``, once there are ``expected`` of
    them and none is the connection ``unless`` (the management API lists a connection a moment
    after it opens or closes)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [c for c in rabbitmq_management(stack, "/api/connections")
                 if (c.get("client_properties") or {}).get("connection_name") == name]
        settled = len(found) == expected and all(c["name"] != unless for c in found)
        if settled or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def _close_from_the_broker(stack, connection: dict) -> None:
    params = amqp_parameters(stack)
    token = base64.b64encode(f"{params.credentials.username}:{params.credentials.password}".encode()).decode()
    name = urllib.parse.quote(connection["name"], safe="")
    url = stack.rabbitmq_management_url.rstrip("/") + "/api/connections/" + name
    request = urllib.request.Request(url, method="DELETE", headers={"Authorization": f"Basic {token}",
                                                                    "X-Reason": "health check test"})
    with urllib.request.urlopen(request, timeout=10):
        pass


@pytest.fixture
def named_check(stack):
    check = RabbitMQHealthCheck(stack.amqp_url, connection_name=f"healthcheck-test-{uuid.uuid4().hex[:10]}")
    yield check
    check.close()


def test_probes_share_one_connection(stack, named_check):
    for _ in range(4):
        assert named_check.check().status is Status.HEALTHY
    assert len(_connections_named(stack, named_check.connection_name, 1)) == 1
    time.sleep(1)   # a connection per probe would show now as more than one, or as churn
    assert len(_connections_named(stack, named_check.connection_name, 1)) == 1


def test_a_connection_the_broker_closed_is_replaced_within_the_next_probe(stack, named_check):
    assert named_check.check().status is Status.HEALTHY
    [first] = _connections_named(stack, named_check.connection_name, 1)
    _close_from_the_broker(stack, first)
    # (the broker lists the closed connection until its client reads the close: the next probe does)

    assert named_check.check().status is Status.HEALTHY
    # (for a while the listing may still show the closed connection alone, the new one not yet)
    listed = _connections_named(stack, named_check.connection_name, 1, unless=first["name"])
    assert len(listed) == 1 and listed[0]["name"] != first["name"]


def test_closing_the_runner_closes_the_connection(stack, named_check):
    runner = HealthCheckRunner([named_check], timeout=10)
    assert runner.run()[0].status is Status.HEALTHY
    assert len(_connections_named(stack, named_check.connection_name, 1)) == 1
    runner.close()
    assert _connections_named(stack, named_check.connection_name, 0) == []


def test_an_unreachable_broker_is_unhealthy_and_keeps_no_connection():
    check = RabbitMQHealthCheck("amqp://guest:guest@127.0.0.1:1/%2F", timeout=1)
    result = HealthCheckRunner([check], timeout=5).run()[0]
    assert result.status is Status.UNHEALTHY
    assert not check.connected


def test_closing_does_not_wait_for_a_probe_that_hangs(stack):
    probe_lock = threading.Lock()
    check = RabbitMQHealthCheck(stack.amqp_url, timeout=0.5, probe_lock=probe_lock)
    probe_lock.acquire()   # a probe stuck on an unresponsive broker holds it
    try:
        closing = threading.Thread(target=check.close)
        closing.start()
        closing.join(30)
        assert not closing.is_alive()   # it gave up on the lock (0.5 s) instead of waiting for the probe
        result = check.check()
        assert result.status is Status.UNHEALTHY and "previous probe" in result.cause
    finally:
        probe_lock.release()
