"""``/healthcheck``: James's JSON, relaxed vs strict codes, ``check=`` selection, timeouts."""

from __future__ import annotations

import threading
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.observability.checks import RabbitMQHealthCheck
from mailserver.observability.health import FunctionCheck, HealthCheck, HealthCheckRunner, Result, Status, worst
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import error, make_context


class Fixed(HealthCheck):
    def __init__(self, name: str, status: Status, cause: str | None = None) -> None:
        self.name, self.status, self.cause = name, status, cause

    def check(self) -> Result:
        return Result(self.name, self.status, self.cause)


def client_for(*checks: HealthCheck, timeout: float = 2.0) -> TestClient:
    return TestClient(create_app(make_context(health_checks=list(checks), health_timeout=timeout)),
                      raise_server_exceptions=False)


def test_all_healthy():
    c = client_for(Fixed("Cassandra backend", Status.HEALTHY))
    response = c.get("/healthcheck")
    assert response.status_code == 200
    assert response.json() == {"status": "healthy", "checks": [
        {"componentName": "Cassandra backend", "escapedComponentName": "Cassandra%20backend",
         "status": "healthy", "cause": None},
        {"componentName": "MaintenanceMode", "escapedComponentName": "MaintenanceMode",
         "status": "healthy", "cause": None}]}


def test_degraded_is_200_relaxed_and_503_strict():
    c = client_for(Fixed("EventDeadLettersHealthCheck", Status.DEGRADED, "3 events"))
    assert c.get("/healthcheck").status_code == 200
    assert c.get("/healthcheck").json()["status"] == "degraded"
    assert c.get("/healthcheck?strict").status_code == 503
    assert c.get("/healthcheck/checks/EventDeadLettersHealthCheck").status_code == 200
    assert c.get("/healthcheck/checks/EventDeadLettersHealthCheck?strict=").status_code == 503


def test_unhealthy_is_503():
    c = client_for(Fixed("OpenSearch Backend", Status.UNHEALTHY, "red"), Fixed("ObjectStorage", Status.HEALTHY))
    response = c.get("/healthcheck")
    assert (response.status_code, response.json()["status"]) == (503, "unhealthy")
    one = c.get("/healthcheck/checks/OpenSearch%20Backend")
    assert one.status_code == 503
    assert one.json() == {"componentName": "OpenSearch Backend", "escapedComponentName": "OpenSearch%20Backend",
                          "status": "unhealthy", "cause": "red"}


def test_check_selection_and_unknown_names():
    c = client_for(Fixed("A", Status.UNHEALTHY), Fixed("B", Status.HEALTHY))
    selected = c.get("/healthcheck?check=B")
    assert selected.status_code == 200
    assert [x["componentName"] for x in selected.json()["checks"]] == ["B"]
    body = error(c.get("/healthcheck?check=B&check=X&check=Y"))
    assert body["statusCode"] == 404
    assert "X, Y" in body["message"]
    assert error(c.get("/healthcheck/checks/nope"))["statusCode"] == 404


def test_list_of_checks():
    c = client_for(Fixed("RabbitMQ backend", Status.HEALTHY))
    assert c.get("/healthcheck/checks").json() == [
        {"componentName": "RabbitMQ backend", "escapedComponentName": "RabbitMQ%20backend"},
        {"componentName": "MaintenanceMode", "escapedComponentName": "MaintenanceMode"}]


def test_a_raising_check_is_unhealthy_with_its_cause():
    def probe():
        raise ConnectionError("connection refused")

    body = client_for(FunctionCheck("Cassandra backend", probe)).get("/healthcheck/checks/Cassandra%20backend").json()
    assert body["status"] == "unhealthy"
    assert "connection refused" in body["cause"]


def test_a_hanging_check_times_out():
    release = threading.Event()
    c = client_for(FunctionCheck("Hangs", lambda: release.wait(10)), timeout=0.3)
    try:
        body = c.get("/healthcheck/checks/Hangs").json()
        assert body["status"] == "unhealthy"
        assert "timed out" in body["cause"]
    finally:
        release.set()


def test_rabbitmq_check_on_a_closed_port_is_unhealthy():
    result = HealthCheckRunner([RabbitMQHealthCheck("amqp://guest:guest@127.0.0.1:1/%2F", timeout=1)]).run()[0]
    assert result.status is Status.UNHEALTHY


@pytest.mark.parametrize(("statuses", "expected"), [
    ([], Status.HEALTHY), ([Status.HEALTHY, Status.DEGRADED], Status.DEGRADED),
    ([Status.DEGRADED, Status.UNHEALTHY, Status.HEALTHY], Status.UNHEALTHY)])
def test_worst(statuses, expected):
    assert worst(statuses) is expected


def test_maintenance_degrades_health():
    ctx = make_context()
    c = TestClient(create_app(ctx))
    ctx.maintenance.enable("upgrading Cassandra", "ops")
    ctx.guard.invalidate()
    body = c.get("/healthcheck/checks/MaintenanceMode").json()
    assert body["status"] == "degraded"
    assert "since" in body["cause"] and "upgrading Cassandra" in body["cause"] and "ops" in body["cause"]
