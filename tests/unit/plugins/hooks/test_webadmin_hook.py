"""WebAdminHook against the real WebAdmin app: health (200/503 both answers), auth, errors, maintenance, tasks."""

from __future__ import annotations

import threading
import time
import uuid

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mailplatform.hooks.webadmin import WebAdminApiError, WebAdminHook, describe, failing_components

from mailserver.observability.health import FunctionCheck, Status
from mailserver.webadmin.auth import AuthConfig
from tests.contract.task_manager_contract import CountingTask
from tests.support.no_io import connections_while_building
from tests.unit.plugins.webadmin_server import CASSANDRA, OPENSEARCH
from tests.unit.webadmin.task_support import COUNTING, task_context
from tests.unit.webadmin.webadmin_support import make_context


def test_init_does_no_io(monkeypatch):
    attempts, hook = connections_while_building(monkeypatch, WebAdminHook, lambda: WebAdminHook("no_such_connection"))
    assert attempts == []
    assert hook.webadmin_conn_id == "no_such_connection"


def test_health_healthy(webadmin):
    with WebAdminHook() as hook:
        body = hook.health()
    assert body["status"] == "healthy"
    assert [c["componentName"] for c in body["checks"]] == [CASSANDRA, OPENSEARCH, "MaintenanceMode"]
    assert failing_components(body) == []


def test_health_unhealthy_returns_the_503_report_instead_of_raising(webadmin):
    webadmin.checks[OPENSEARCH].set(Status.UNHEALTHY, "cluster red")
    with WebAdminHook() as hook:
        body = hook.health()
        one = hook.health(OPENSEARCH)   # "OpenSearch Backend": the space must be escaped in the path
        selected = hook.health(checks=[CASSANDRA])
    assert body["status"] == "unhealthy"
    assert one == {"componentName": OPENSEARCH, "escapedComponentName": "OpenSearch%20Backend",
                   "status": "unhealthy", "cause": "cluster red"}
    assert selected["status"] == "healthy"
    assert describe(failing_components(body)) == "OpenSearch Backend is unhealthy (cluster red)"
    assert describe(failing_components(one)) == "OpenSearch Backend is unhealthy (cluster red)"


def test_degraded_passes_only_when_accepted(webadmin):
    webadmin.checks[CASSANDRA].set(Status.DEGRADED, "slow")
    with WebAdminHook() as hook:
        body = hook.health()
    assert body["status"] == "degraded"
    assert [c["componentName"] for c in failing_components(body)] == [CASSANDRA]
    assert failing_components(body, accept_degraded=True) == []


def test_unknown_component_raises_james_error(webadmin):
    with WebAdminHook() as hook, pytest.raises(WebAdminApiError) as caught:
        hook.health("Nope")
    assert (caught.value.status_code, caught.value.type) == (404, "notFound")
    assert "Component with name Nope cannot be found" in str(caught.value)


def test_wrong_password_raises_with_the_servers_answer(serve):
    serve(password="not-the-password")
    with WebAdminHook() as hook, pytest.raises(WebAdminApiError) as caught:
        hook.maintenance_state()
    # James's auth filter answers plain text, not its JSON error body.
    assert (caught.value.status_code, caught.value.type, caught.value.message) == (401, None, "Wrong password.")
    assert "GET /maintenance answered 401" in str(caught.value)


def test_api_errors_carry_james_error_json(serve):
    unknown = str(uuid.uuid4())
    with task_context() as ctx:
        serve(ctx)
        with WebAdminHook() as hook:
            with pytest.raises(WebAdminApiError) as missing:
                hook.get_task(unknown)
            with pytest.raises(WebAdminApiError) as invalid:
                hook.get_task("not-a-uuid")
    assert missing.value.body == {"statusCode": 404, "type": "notFound", "message": f"{unknown} can not be found",
                                  "details": None}
    assert (missing.value.status_code, missing.value.type) == (404, "notFound")
    assert (invalid.value.status_code, invalid.value.type, invalid.value.message, invalid.value.details) == (
        400, "InvalidArgument", "Invalid task id", "Invalid UUID string: not-a-uuid")
    assert "answered 400: InvalidArgument: Invalid task id (Invalid UUID string: not-a-uuid)" in str(invalid.value)


def test_jwt_from_connection_extra(serve):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    token = jwt.encode({"sub": "airflow@ops", "admin": True, "exp": int(time.time()) + 300}, key, algorithm="RS256")
    serve(make_context(AuthConfig.jwt(public)), password=None, jwt=token)
    with WebAdminHook() as hook:
        assert hook.enable_maintenance("jwt")["updatedBy"] == "airflow@ops"
    serve(make_context(AuthConfig.jwt(public)), password=None)   # the same server kind, no token
    with WebAdminHook() as hook, pytest.raises(WebAdminApiError) as caught:
        hook.maintenance_state()
    assert (caught.value.status_code, caught.value.message) == (401, "No Bearer header.")


def test_maintenance_round_trip_and_idempotent_disable(webadmin):
    with WebAdminHook() as hook:
        assert hook.maintenance_state()["enabled"] is False
        on = hook.enable_maintenance("reindex")
        assert (on["enabled"], on["reason"], on["updatedBy"]) == (True, "reindex", "admin")
        assert hook.maintenance_state() == on
        assert webadmin.ctx.maintenance.get().enabled is True   # the server's store, not the echo
        assert hook.disable_maintenance()["enabled"] is False
        assert hook.disable_maintenance()["enabled"] is False   # already off: still fine
        assert hook.maintenance_state()["enabled"] is False
    assert webadmin.ctx.maintenance.get().enabled is False


def test_get_and_await_task(serve):
    with task_context() as ctx:
        serve(ctx)
        done = str(ctx.tasks.submit(CountingTask(COUNTING, steps=2)))
        with WebAdminHook() as hook:
            report = hook.await_task(done, timeout=20)
            assert (report["taskId"], report["status"]) == (done, "completed")
            assert hook.get_task(done) == report
            slow = str(ctx.tasks.submit(CountingTask(COUNTING, steps=2000, pause=0.01)))
            with pytest.raises(WebAdminApiError) as caught:
                hook.await_task(slow, timeout=0)
            assert caught.value.status_code == 408
        ctx.tasks.cancel(uuid.UUID(slow))


def test_request_timeout_is_configurable(serve):
    release = threading.Event()
    serve(make_context(health_checks=[FunctionCheck("Hangs", lambda: release.wait(10))], health_timeout=5))
    try:
        with WebAdminHook(timeout=0.3) as hook, pytest.raises(httpx.ReadTimeout):
            hook.health("Hangs")
    finally:
        release.set()
