"""WebAdminHealthTrigger: serialisable for the triggerer, polls until healthy, reports timeouts and errors."""

from __future__ import annotations

import asyncio
import json
import threading
import time

from airflow.sdk.module_loading import import_string
from mailplatform.triggers.health import WebAdminHealthTrigger

from mailserver.observability.health import Status
from tests.unit.plugins.webadmin_server import CASSANDRA, OPENSEARCH, connection

CLASSPATH = "mailplatform.triggers.health.WebAdminHealthTrigger"


def first_event(trigger: WebAdminHealthTrigger, within: float = 20.0):
    async def run():
        events = trigger.run()
        try:
            return await asyncio.wait_for(events.__anext__(), within)
        finally:
            await events.aclose()

    return asyncio.run(run()).payload


def test_serialize_round_trip_without_secrets():
    trigger = WebAdminHealthTrigger(webadmin_conn_id="webadmin_other", components=[CASSANDRA],
                                    accept_degraded=True, poll_interval=5, deadline=1234.5, request_timeout=3)
    classpath, kwargs = trigger.serialize()
    assert classpath == CLASSPATH
    assert json.loads(json.dumps(kwargs)) == kwargs   # plain JSON: what the trigger table stores
    again = import_string(classpath)(**kwargs)
    assert again.serialize() == (classpath, kwargs)
    assert kwargs == {"webadmin_conn_id": "webadmin_other", "components": [CASSANDRA], "accept_degraded": True,
                      "poll_interval": 5, "deadline": 1234.5, "request_timeout": 3}


def test_run_yields_healthy(webadmin):
    event = first_event(WebAdminHealthTrigger(poll_interval=0.05))
    assert event["status"] == "healthy"
    assert event["health"]["status"] == "healthy"


def test_run_keeps_polling_until_healthy(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "red")
    threading.Timer(0.5, webadmin.checks[OPENSEARCH].set, args=(Status.HEALTHY,)).start()
    event = first_event(WebAdminHealthTrigger(poll_interval=0.05, deadline=time.time() + 20))
    assert event["status"] == "healthy"


def test_run_reports_timeout_with_failing_components(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "red")
    event = first_event(WebAdminHealthTrigger(poll_interval=0.05, deadline=time.time() + 0.3))
    assert event["status"] == "timeout"
    assert event["message"] == "OpenSearch Backend is unhealthy (red)"


def test_selection_and_degraded(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "red")
    webadmin.checks[CASSANDRA].set(Status.DEGRADED, "slow")
    assert first_event(WebAdminHealthTrigger(components=[CASSANDRA], accept_degraded=True))["status"] == "healthy"
    strict = first_event(WebAdminHealthTrigger(components=[CASSANDRA], poll_interval=0.05, deadline=time.time()))
    assert (strict["status"], strict["message"]) == ("timeout", "Cassandra backend is degraded (slow)")


def test_unknown_component_is_an_error_not_a_wait(webadmin):
    event = first_event(WebAdminHealthTrigger(components=["Nope"]))
    assert event["status"] == "error"
    assert "Components with name Nope cannot be found" in event["message"]


def test_unreachable_server_is_waited_for(monkeypatch, closed_port):
    monkeypatch.setenv("AIRFLOW_CONN_WEBADMIN_DEFAULT", connection(closed_port))
    event = first_event(WebAdminHealthTrigger(poll_interval=0.05, deadline=time.time() + 0.3))
    assert event["status"] == "timeout"
    assert event["message"].startswith(f"WebAdmin unreachable at http://127.0.0.1:{closed_port}")
