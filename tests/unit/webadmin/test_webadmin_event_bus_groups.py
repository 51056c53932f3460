"""``/events/groups`` (ours): required vs registered groups, the audit, and the ``event-bus-groups-reset`` task.

RabbitMQ is played by a fake management API (bindings and queues as the HTTP API lists them) and
a fake topology that binds and unbinds in it, so the real ``RegisteredGroups`` parsing runs.
"""

from __future__ import annotations

import urllib.error
import warnings
from datetime import UTC, datetime

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

from mailserver.events.in_process import InProcessEventBus
from mailserver.events.naming import BusNames
from mailserver.events.registered_groups import RegisteredGroups
from mailserver.events.required_groups import RequiredGroups, RequireGroups
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.event_bus_support import await_task, event_bus_context
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

NAMES = BusNames()
QUOTA, FAST_VIEW, OLD, LOST = ("org.apache.james.Quota$QuotaGroup", "org.apache.james.FastView$FastViewGroup",
                               "org.apache.james.Old$OldGroup", "org.apache.james.Lost$LostGroup")


class FakeManagement:
    """The two management-API reads ``RegisteredGroups`` makes, over a set of bound groups and queues."""

    vhost = "/"

    def __init__(self, bound: set[str], queues: dict[str, int]) -> None:
        self.bound = bound
        self.queues = queues   # group -> messages
        self.down = False

    def get(self, path: str) -> list[dict]:
        if self.down:
            raise urllib.error.URLError("Connection refused")
        if path.startswith("/api/bindings/"):
            return [{"source": NAMES.retry_exchange(g), "destination_type": "queue",
                     "destination": NAMES.work_queue(g)} for g in sorted(self.bound)]
        if path.startswith("/api/queues/"):
            return [{"name": NAMES.shared_queue, "messages": 0, "consumers": 1},
                    *({"name": NAMES.work_queue(g), "messages": n, "consumers": 0} for g, n in self.queues.items())]
        raise AssertionError(path)


class FakeTopology:
    def __init__(self, management: FakeManagement) -> None:
        self.management = management
        self.calls: list[tuple[str, list[str]]] = []

    def bind_groups(self, groups) -> None:
        groups = list(groups)
        self.calls.append(("bind", groups))
        self.management.bound.update(groups)
        self.management.queues.update({g: self.management.queues.get(g, 0) for g in groups})

    def unbind_groups(self, groups) -> None:
        groups = list(groups)
        self.calls.append(("unbind", groups))
        self.management.bound.difference_update(groups)   # the queue stays


@pytest.fixture
def management():
    # QUOTA required and bound; FAST_VIEW required but never bound; OLD bound, no longer required, 7
    # messages waiting; LOST neither bound nor required, its queue holding 2.
    return FakeManagement({QUOTA, OLD}, {QUOTA: 0, OLD: 7, LOST: 2})


@pytest.fixture
def required():
    groups = RequiredGroups(MemoryEventStore())
    groups.require(RequireGroups({QUOTA, OLD}, "node-1", datetime(2026, 1, 1, tzinfo=UTC)))
    groups.require(RequireGroups({QUOTA, FAST_VIEW}, "node-2", datetime(2026, 2, 1, tzinfo=UTC)))
    return groups


@pytest.fixture
def topology(management):
    return FakeTopology(management)


@pytest.fixture
def ctx(required, management, topology):
    with event_bus_context(InProcessEventBus(), required_groups=required,
                           registered_groups=RegisteredGroups(management, NAMES),   # type: ignore[arg-type]
                           topology=topology) as context:
        yield context


def test_groups_show_required_registered_divergence_and_audit(client):
    response = client.get("/events/groups")

    assert response.status_code == 200
    assert response.json() == {
        "required": sorted([FAST_VIEW, QUOTA]),
        "registered": sorted([OLD, QUOTA]),
        "missing": [FAST_VIEW],
        "unexpected": [OLD],
        "orphanQueues": [
            {"group": LOST, "queue": NAMES.work_queue(LOST), "messages": 2, "consumers": 0},
            {"group": OLD, "queue": NAMES.work_queue(OLD), "messages": 7, "consumers": 0}],
        "diverges": True,
        "audit": [
            {"type": "RequiredGroupAdded", "group": OLD, "host": "node-1", "date": "2026-01-01T00:00:00Z"},
            {"type": "RequiredGroupAdded", "group": QUOTA, "host": "node-1", "date": "2026-01-01T00:00:00Z"},
            {"type": "RequiredGroupAdded", "group": FAST_VIEW, "host": "node-2", "date": "2026-02-01T00:00:00Z"},
            {"type": "RequiredGroupRemoved", "group": OLD, "host": "node-2", "date": "2026-02-01T00:00:00Z"}],
    }


def test_reset_binds_missing_unbinds_unexpected_and_reports_orphans(client, topology, management):
    report = await_task(client, client.post("/events/groups?action=reset"))

    assert report["type"] == "event-bus-groups-reset" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "event-bus-groups-reset",
        "boundGroups": [FAST_VIEW],
        "unboundGroups": [OLD],
        "orphanQueues": [
            {"group": LOST, "queue": NAMES.work_queue(LOST), "messages": 2, "consumers": 0},
            {"group": OLD, "queue": NAMES.work_queue(OLD), "messages": 7, "consumers": 0}]}
    assert topology.calls == [("bind", [FAST_VIEW]), ("unbind", [OLD])]
    assert management.queues[OLD] == 7   # never deleted
    after = client.get("/events/groups").json()
    assert (after["missing"], after["unexpected"], after["registered"]) == ([], [], sorted([FAST_VIEW, QUOTA]))


def test_reset_when_nothing_diverges_changes_nothing(client, topology, management):
    management.bound, management.queues = {QUOTA, FAST_VIEW}, {QUOTA: 0, FAST_VIEW: 0}

    info = await_task(client, client.post("/events/groups?action=reset"))["additionalInformation"]

    assert (info["boundGroups"], info["unboundGroups"], info["orphanQueues"]) == ([], [], [])
    assert topology.calls == []
    assert client.get("/events/groups").json()["diverges"] is False


def test_action_is_compulsory(client):
    body = error(client.post("/events/groups"))
    assert (body["statusCode"], body["type"], body["details"]) == \
        (400, "InvalidArgument", "'action' query parameter is compulsory. Supported values are [reset]")
    assert error(client.post("/events/groups?action=Reset"))["details"] == \
        "Invalid value supplied for query parameter 'action': Reset. Supported values are [reset]"


def test_management_api_unreachable_is_503(client, management):
    management.down = True

    body = error(client.get("/events/groups"))

    assert (body["statusCode"], body["type"], body["message"]) == \
        (503, "ServerError", "The RabbitMQ management API can not be reached")


def test_without_management_url_both_routes_answer_503(required):
    bus = InProcessEventBus()
    ctx = make_context(dead_letters=bus.dead_letters, bus=bus, required_groups=required)
    client = TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)

    for response in (client.get("/events/groups"), client.post("/events/groups?action=reset")):
        body = error(response)
        assert (body["statusCode"], body["type"], body["message"]) == \
            (503, "ServerError", "The RabbitMQ management API is not configured on this server")
        assert "RABBITMQ_MANAGEMENT_URL" in body["details"]
    assert error(client.post("/events/groups"))["statusCode"] == 400   # validated first
