"""Maintenance mode: the store, the cached guard, the routes, the mailbox write guard."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mailserver.mailbox.errors import MaintenanceMode
from mailserver.maintenance.api import MaintenanceState
from mailserver.maintenance.guard import MaintenanceGuard
from mailserver.maintenance.memory import MemoryMaintenanceStore
from tests.support.clock import ManualClock
from tests.unit.webadmin.webadmin_support import NODELETE, READONLY, error


class CountingStore(MemoryMaintenanceStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0
        self.fail = False

    def get(self) -> MaintenanceState:
        self.reads += 1
        if self.fail:
            raise ConnectionError("cassandra down")
        return super().get()


def test_guard_caches_for_ttl():
    store, clock = CountingStore(), ManualClock(0.0)
    guard = MaintenanceGuard(store, ttl=2.0, clock=clock)
    for _ in range(100):
        guard.writes_allowed()
    assert store.reads == 1
    store.enable("upgrade", "ops")
    before = store.reads
    guard.writes_allowed()   # still cached: another node's switch takes up to ttl
    clock.now = 2.5
    with pytest.raises(MaintenanceMode, match="upgrade"):
        guard.writes_allowed()
    assert guard.smtp_allowed() is False
    assert store.reads == before + 1


def test_guard_tells_the_cached_state_without_reading_and_nothing_once_it_is_stale():
    store, clock = CountingStore(), ManualClock(0.0)
    guard = MaintenanceGuard(store, ttl=2.0, clock=clock)
    assert guard.in_maintenance_if_known() is None        # nothing read yet
    assert guard.smtp_allowed() is True
    store.enable("upgrade", "ops")
    assert guard.in_maintenance_if_known() is False       # cached, another node's switch not seen yet
    clock.now = 2.5
    reads = store.reads
    assert guard.in_maintenance_if_known() is None        # stale: only state() may read
    assert store.reads == reads
    assert guard.smtp_allowed() is False
    assert guard.in_maintenance_if_known() is True


def test_guard_keeps_last_state_when_store_fails():
    store, clock = CountingStore(), ManualClock(0.0)
    guard = MaintenanceGuard(store, ttl=1.0, clock=clock)
    store.enable(None, "ops")
    assert guard.smtp_allowed() is False
    store.fail = True
    clock.now = 5
    assert guard.smtp_allowed() is False   # fail-static: maintenance does not end on a read error


def test_enable_keeps_since_and_disable_records_who():
    store = MemoryMaintenanceStore()
    first = store.enable("a", "ops1")
    again = store.enable("b", "ops2")
    assert (again.since, again.reason, again.updated_by) == (first.since, "b", "ops2")
    off = store.disable("ops3")
    assert (off.enabled, off.updated_by, off.reason) == (False, "ops3", None)


def test_routes(client, ctx):
    assert client.get("/maintenance").json() == {"enabled": False, "since": None, "reason": None, "updatedBy": None,
                                                 "expiresAt": None}
    on = client.put("/maintenance", json={"reason": "Cassandra upgrade"})
    assert on.status_code == 200
    body = on.json()
    assert (body["enabled"], body["reason"], body["updatedBy"]) == (True, "Cassandra upgrade", "admin")
    assert body["since"].endswith("Z")
    assert client.get("/maintenance").json() == body
    with pytest.raises(MaintenanceMode):   # effective at once on the node that switched it
        ctx.guard.writes_allowed()
    assert client.put("/maintenance").status_code == 200   # no body is fine
    assert client.delete("/maintenance").json()["enabled"] is False
    ctx.guard.writes_allowed()


def test_route_errors_and_tiers(client, app):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient

    assert error(client.put("/maintenance", json={"reason": 3}))["statusCode"] == 400
    assert error(client.put("/maintenance", json={"why": "x"}))["statusCode"] == 400
    for bad in (0, -5, "60", 7 * 24 * 3600 + 1):
        assert error(client.put("/maintenance", json={"maxDurationSeconds": bad}))["statusCode"] == 400, bad
    assert TestClient(app, headers={"Password": READONLY}).put("/maintenance").status_code == 403
    assert TestClient(app, headers={"Password": NODELETE}).delete("/maintenance").status_code == 403


def test_mailbox_writes_are_refused_while_on():
    from mailserver.blob.memory import MemoryBlobStore
    from mailserver.mailbox.wiring import memory_context
    from mailserver.model.address import Username
    from mailserver.model.mailbox import MailboxPath

    store = MemoryMaintenanceStore()
    guard = MaintenanceGuard(store, ttl=0)
    mailbox = memory_context(MemoryBlobStore(), write_guard=guard.writes_allowed).manager
    bob = Username.of("bob@d.tld")
    mailbox.create_mailbox(MailboxPath.of(bob, "INBOX"))
    store.enable("restore", "ops")
    with pytest.raises(MaintenanceMode):
        mailbox.create_mailbox(MailboxPath.of(bob, "Archive"))
    store.disable("ops")
    mailbox.create_mailbox(MailboxPath.of(bob, "Archive"))


def test_a_window_with_a_deadline_ends_by_itself(client, ctx):
    body = client.put("/maintenance", json={"reason": "repair", "maxDurationSeconds": 3600}).json()
    since, expires = (datetime.fromisoformat(body[k].replace("Z", "+00:00")) for k in ("since", "expiresAt"))
    assert expires - since == timedelta(hours=1)
    assert client.get("/maintenance").json()["expiresAt"] == body["expiresAt"]

    store = MemoryMaintenanceStore()
    past = since - timedelta(hours=2)
    store.put(MaintenanceState(True, past, "repair", "airflow", past + timedelta(hours=1)))
    assert store.get().enabled is False       # the deadline has passed: traffic resumes
    assert MaintenanceGuard(store, ttl=0).smtp_allowed() is True


def test_the_deadline_ends_the_window_even_while_the_store_cannot_be_read():
    store, clock = CountingStore(), ManualClock(0.0)
    state = store.enable("repair", "airflow", timedelta(minutes=5))
    wall = [state.since]
    guard = MaintenanceGuard(store, ttl=1.0, clock=clock, wall_clock=lambda: wall[0])
    assert guard.smtp_allowed() is False
    store.fail = True
    clock.now = 5
    assert guard.smtp_allowed() is False      # fail-static before the deadline
    wall[0] = state.expires_at
    assert guard.smtp_allowed() is True
    assert guard.in_maintenance_if_known() is False


def test_enable_without_a_deadline_clears_the_previous_one():
    store = MemoryMaintenanceStore()
    assert store.enable("repair", "airflow", timedelta(minutes=5)).expires_at is not None
    assert store.enable("manual", "ops").expires_at is None
