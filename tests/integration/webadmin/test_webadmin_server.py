"""WebAdmin over real HTTP (uvicorn) on Cassandra, with health checks of the real services."""

from __future__ import annotations

import time

import httpx
import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.maintenance.cassandra import CassandraMaintenanceStore
from mailserver.observability.checks import CASSANDRA, MAINTENANCE, OBJECT_STORAGE, OPENSEARCH, RABBITMQ
from mailserver.webadmin.app import create_app
from tests.integration.webadmin.conftest import PASSWORD, cassandra_context, serve

pytestmark = pytest.mark.integration


@pytest.fixture
def names(unique):
    token = f"{unique}{time.monotonic_ns() % 10**8}"
    return {"domain": f"wa{token}.tld", "other": f"wb{token}.tld"}


def test_domains_users_and_mappings(http, names, cassandra):
    d, e = names["domain"], names["other"]
    assert http.put(f"/domains/{d}").status_code == 204
    assert http.put(f"/domains/{e}").status_code == 204
    assert d in http.get("/domains").json()
    assert http.get(f"/domains/{d}").status_code == 204
    assert http.put(f"/users/bob@{d}", json={"password": "s3cret"}).status_code == 204
    assert http.put(f"/users/bob@{d}", json={"password": "s3cret"}).status_code == 409
    assert http.head(f"/users/bob@{d}").status_code == 200
    assert {"username": f"bob@{d}"} in http.get("/users").json()
    assert http.post(f"/users/bob@{d}/verify", json={"password": "s3cret"}).status_code == 204

    assert http.put(f"/address/groups/team@{d}/bob@{d}").status_code == 204
    assert http.get(f"/address/groups/team@{d}").json() == [f"bob@{d}"]
    assert http.put(f"/address/aliases/bob@{d}/sources/robert@{d}").status_code == 204
    assert http.get(f"/address/aliases/bob@{d}").json() == [{"source": f"robert@{d}"}]
    assert http.put(f"/address/forwards/bob@{d}/targets/bob@{e}").status_code == 204
    assert http.get(f"/address/forwards/bob@{d}").json() == [{"mailAddress": f"bob@{e}"}]
    assert http.put(f"/domainMappings/{e}", content=d.encode()).status_code == 204
    assert http.get(f"/domainMappings/{e}").json() == [d]
    assert http.post(f"/mappings/regex/x@{d}/targets/(.*)@{d}:$1@{e}").status_code == 204
    everything = http.get("/mappings").json()
    assert everything[f"team@{d}"] == [{"type": "Group", "mapping": f"bob@{d}"}]
    assert everything[f"robert@{d}"] == [{"type": "Alias", "mapping": f"bob@{d}"}]
    assert everything[e] == [{"type": "Domain", "mapping": d}]
    assert http.get(f"/mappings/sources/bob@{d}?type=group").json() == [f"team@{d}"]
    # Written to James's rrt table by the same requests.
    assert cassandra.execute("SELECT mapping FROM rrt WHERE user = ? AND domain = ?", ("team", d)) == [
        {"mapping": f"group:bob@{d}"}]

    body = http.put(f"/address/groups/bob@{d}/x@{e}").json()
    assert (body["statusCode"], body["type"]) == (409, "WrongState")
    assert http.delete(f"/users/bob@{d}").status_code == 204
    assert http.head(f"/users/bob@{d}").status_code == 404
    assert http.delete(f"/domains/{e}").status_code == 204
    assert http.get(f"/domains/{e}").json()["type"] == "notFound"


def test_auth_over_http(webadmin):
    with httpx.Client(base_url=webadmin, timeout=30) as anonymous:
        refused = anonymous.get("/domains")
        assert (refused.status_code, refused.text) == (401, "No Password in header.")
        assert anonymous.get("/openapi.json").status_code == 200
        assert anonymous.get("/metrics").status_code == 200


def test_health_checks_all_healthy(http, cassandra):
    CassandraMaintenanceStore(cassandra).disable("integration")
    response = http.get("/healthcheck")
    body = response.json()
    assert response.status_code == 200, body
    assert body["status"] == "healthy", body
    assert {c["componentName"] for c in body["checks"]} == {CASSANDRA, OPENSEARCH, RABBITMQ, OBJECT_STORAGE,
                                                            MAINTENANCE}
    assert http.get("/healthcheck/checks/Cassandra%20backend").json()["status"] == "healthy"


def test_an_unreachable_backend_is_unhealthy(cassandra, stack):
    from tests.integration.webadmin.conftest import backend_checks
    from tests.support.ports import unused_port

    dead = f"http://127.0.0.1:{unused_port()}"   # nothing listens there
    ctx = cassandra_context(cassandra, stack, health_checks=backend_checks(stack, cassandra, opensearch_url=dead),
                            health_timeout=5)
    with serve(create_app(ctx)) as url:
        response = httpx.get(f"{url}/healthcheck", timeout=30)
    body = response.json()
    assert response.status_code == 503
    status = {c["componentName"]: c["status"] for c in body["checks"]}
    assert status[OPENSEARCH] == "unhealthy"
    assert status[CASSANDRA] == status[RABBITMQ] == status[OBJECT_STORAGE] == "healthy"


def test_maintenance_mode_is_cluster_wide(http, cassandra, cassandra_config, stack):
    """Switched on through one node, seen by another node with its own Cassandra connection."""
    other_session = CassandraSession.connect(cassandra_config)
    try:
        other = create_app(cassandra_context(other_session, stack, health_checks=[]))
        with serve(other) as url, httpx.Client(base_url=url, headers={"Password": PASSWORD}, timeout=30) as node2:
            try:
                on = http.put("/maintenance", json={"reason": "integration test"}).json()
                assert on["enabled"] is True and on["updatedBy"] == "admin"
                assert node2.get("/maintenance").json() == on
                guard = other.state.ctx.guard
                deadline = time.monotonic() + guard.ttl + 3
                while guard.smtp_allowed() and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert guard.smtp_allowed() is False   # the other node's cache caught up within its TTL
                check = node2.get("/healthcheck/checks/MaintenanceMode")
                assert (check.status_code, check.json()["status"]) == (200, "degraded")
                assert node2.get("/healthcheck/checks/MaintenanceMode?strict").status_code == 503
                assert "maintenance_mode_enabled 1.0" in node2.get("/metrics").text
                off = node2.delete("/maintenance").json()
                assert off["enabled"] is False
                assert http.get("/maintenance").json()["enabled"] is False
            finally:
                CassandraMaintenanceStore(cassandra).disable("integration cleanup")
    finally:
        other_session.close()
