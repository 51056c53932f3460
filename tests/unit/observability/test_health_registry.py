"""The check registry (``HealthCheckRunner``): unique names, checks registered after start-up.

This is how the event-bus checks of later issues (fast-view hit ratio, groups divergence) plug
in: appended to the server's list, or registered on a running WebAdmin's runner.
"""

from __future__ import annotations

import threading
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.observability.checks import MESSAGE_FAST_VIEW_PROJECTION
from mailserver.observability.health import FunctionCheck, HealthCheck, HealthCheckRunner, Result, Status
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import make_context


class Degraded(HealthCheck):
    def __init__(self, name: str) -> None:
        self.name = name

    def check(self) -> Result:
        return self.degraded("miss ratio 42%")


def test_duplicate_names_are_refused():
    with pytest.raises(ValueError, match="already registered"):
        HealthCheckRunner([FunctionCheck("A", lambda: None), FunctionCheck("A", lambda: None)])
    runner = HealthCheckRunner([FunctionCheck("A", lambda: None)])
    with pytest.raises(ValueError, match="already registered"):
        runner.register(FunctionCheck("A", lambda: None))
    assert runner.names() == ["A"]


def test_a_check_registered_on_a_running_webadmin_is_listed_and_run():
    app = create_app(make_context())
    client = TestClient(app)
    assert MESSAGE_FAST_VIEW_PROJECTION not in [c["componentName"] for c in client.get("/healthcheck/checks").json()]
    app.state.health_runner.register(Degraded(MESSAGE_FAST_VIEW_PROJECTION))
    assert {"componentName": "MessageFastViewProjection", "escapedComponentName": "MessageFastViewProjection"} in (
        client.get("/healthcheck/checks").json())
    one = client.get("/healthcheck/checks/MessageFastViewProjection").json()
    assert (one["status"], one["cause"]) == ("degraded", "miss ratio 42%")
    assert client.get("/healthcheck").json()["status"] == "degraded"


def test_registered_checks_still_run_concurrently():
    # Every check waits for all the others: it passes only if the pool grew with the registrations.
    count = 8
    barrier = threading.Barrier(count, timeout=3)
    runner = HealthCheckRunner([FunctionCheck("c0", lambda: barrier.wait() and None)], timeout=5)
    for i in range(1, count):
        runner.register(FunctionCheck(f"c{i}", lambda: barrier.wait() and None))
    try:
        assert [r.status for r in runner.run()] == [Status.HEALTHY] * count
    finally:
        runner.close()
