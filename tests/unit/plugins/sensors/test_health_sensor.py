"""WebAdminHealthSensor: poke, selection, degraded, the timeout message, deferral to the trigger."""

from __future__ import annotations

import time

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout, TaskDeferred
from mailplatform.hooks.webadmin import WebAdminApiError
from mailplatform.sensors.health import WebAdminHealthSensor
from mailplatform.triggers.health import WebAdminHealthTrigger

from mailserver.observability.health import Status
from tests.unit.plugins.webadmin_server import CASSANDRA, OPENSEARCH, connection


def sensor(**kwargs) -> WebAdminHealthSensor:
    return WebAdminHealthSensor(task_id="healthy", poke_interval=0.05, timeout=5, **kwargs)


def test_poke_true_when_healthy_false_when_not(webadmin):
    assert sensor().poke({}) is True
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "red")
    probe = sensor()
    assert probe.poke({}) is False
    assert probe.last_problem == "OpenSearch Backend is unhealthy (red)"


def test_components_selection(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "red")
    assert sensor(components=[CASSANDRA]).poke({}) is True
    assert sensor(components=[CASSANDRA, OPENSEARCH]).poke({}) is False


def test_maintenance_degrades_and_accept_degraded_lets_it_pass(webadmin):
    webadmin.ctx.maintenance.enable("reindex", "ops")
    webadmin.ctx.guard.invalidate()
    assert sensor().poke({}) is False
    assert sensor(accept_degraded=True).poke({}) is True


def test_unreachable_server_is_not_healthy_yet(monkeypatch, closed_port):
    monkeypatch.setenv("AIRFLOW_CONN_WEBADMIN_DEFAULT", connection(closed_port))
    probe = sensor()
    assert probe.poke({}) is False
    assert probe.last_problem.startswith("WebAdmin unreachable")


def test_unknown_component_fails_instead_of_waiting(webadmin):
    with pytest.raises(WebAdminApiError, match="Components with name Nope cannot be found"):
        sensor(components=["Nope"]).poke({})


def test_timeout_names_unhealthy_components_and_causes(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "cluster red")
    webadmin.checks[CASSANDRA].set(Status.UNHEALTHY, "no host available")
    with pytest.raises(AirflowSensorTimeout) as caught:
        WebAdminHealthSensor(task_id="healthy", poke_interval=0.05, timeout=0.2).execute({})
    assert "Cassandra backend is unhealthy (no host available)" in str(caught.value)
    assert "OpenSearch Backend is unhealthy (cluster red)" in str(caught.value)


def test_execute_succeeds_once_healthy(webadmin):
    assert sensor().execute({}) is None


def test_deferrable_defers_to_the_trigger_when_unhealthy(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "red")
    before = time.time()
    with pytest.raises(TaskDeferred) as caught:
        sensor(deferrable=True, components=[OPENSEARCH], accept_degraded=True).execute({})
    deferred = caught.value
    assert deferred.method_name == "execute_complete"
    assert isinstance(deferred.trigger, WebAdminHealthTrigger)
    classpath, kwargs = deferred.trigger.serialize()
    assert classpath == "mailplatform.triggers.health.WebAdminHealthTrigger"
    assert (kwargs["webadmin_conn_id"], kwargs["components"], kwargs["accept_degraded"], kwargs["poll_interval"]) == (
        "webadmin_default", [OPENSEARCH], True, 0.05)
    assert before + 5 <= kwargs["deadline"] <= time.time() + 5   # the sensor's timeout, as an absolute deadline
    assert deferred.timeout.total_seconds() > 5   # Airflow's backstop fires after the trigger's own timeout


def test_deferrable_does_not_defer_when_already_healthy(webadmin):
    assert sensor(deferrable=True).execute({}) is None


def test_execute_complete(webadmin):
    probe = sensor(deferrable=True)
    assert probe.execute_complete({}, {"status": "healthy", "message": "healthy"}) is None
    with pytest.raises(AirflowSensorTimeout, match="OpenSearch Backend is unhealthy \\(red\\)"):
        probe.execute_complete({}, {"status": "timeout", "message": "OpenSearch Backend is unhealthy (red)"})
    with pytest.raises(AirflowException, match="cannot be found"):
        probe.execute_complete({}, {"status": "error", "message": "Components with name X cannot be found"})
