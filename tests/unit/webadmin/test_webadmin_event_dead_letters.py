"""``/events/deadLetter``: James's routes, JSON and errors; redelivery tasks over the in-process bus."""

from __future__ import annotations

import json
import urllib.parse
import uuid
import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

from mailserver.events.api import EventBusError
from mailserver.events.in_process import InProcessEventBus
from mailserver.model.events import serialize_event
from mailserver.webadmin.app import create_app
from tests.support.events import Recording, sample_added
from tests.unit.webadmin.event_bus_support import await_task, event_bus_context, group
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

BASE = "/events/deadLetter"
ACTION_DETAILS = "Supported values are [reDeliver]"


def path(*parts: str) -> str:
    return "/".join([BASE, "groups", *(urllib.parse.quote(p, safe="") for p in parts)])


@pytest.fixture
def bus():
    return InProcessEventBus(retries=0)


@pytest.fixture
def ctx(bus):
    with event_bus_context(bus) as context:
        yield context


@pytest.fixture
def listeners(bus):
    """Two healthy listeners registered on the bus."""
    a, b = Recording(group("A")), Recording(group("B"))
    bus.register(a)
    bus.register(b)
    return a, b


def admin(ctx) -> TestClient:
    return TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)


def store(ctx, group_name: str, event=None) -> tuple[uuid.UUID, str]:
    text = serialize_event(event or sample_added())
    return ctx.dead_letters.store_json(group_name, text), text


# -- reading ----------------------------------------------------------------------------------
def test_groups_list_only_groups_holding_dead_letters(client, ctx):
    assert client.get(f"{BASE}/groups").json() == []
    a, b, emptied = group("A"), group("B"), group("Emptied")
    store(ctx, a)
    store(ctx, a)
    store(ctx, b)
    gone, _ = store(ctx, emptied)
    ctx.dead_letters.remove(emptied, gone)

    response = client.get(f"{BASE}/groups")

    assert response.status_code == 200
    assert sorted(response.json()) == sorted([a, b])


def test_insertion_ids_of_a_group_oldest_first(client, ctx):
    a, b = group("A"), group("B")
    first, _ = store(ctx, a)
    second, _ = store(ctx, a)
    store(ctx, b)

    assert client.get(path(a)).json() == [str(first), str(second)]
    assert client.get(path(group("None"))).json() == []


def test_an_event_is_its_stored_json(client, ctx):
    a = group("A")
    insertion_id, text = store(ctx, a)

    response = client.get(path(a, str(insertion_id)))

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    assert response.text == text
    assert "Added" in response.json()


def test_an_absent_event_is_james_not_found(client, ctx):
    a, absent = group("A"), str(uuid.uuid4())
    store(ctx, a)

    response = client.get(path(a, absent))

    body = error(response)
    assert (body["statusCode"], body["type"]) == (404, "notFound")
    assert body["message"] == f"GET {BASE}/groups/{a}/{absent} can not be found"


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_malformed_insertion_id_and_group(client, ctx, method):
    body = error(client.request(method, path(group("A"), "invalid")))
    assert (body["statusCode"], body["type"], body["message"], body["details"]) == \
        (400, "InvalidArgument", "Can not deserialize the supplied insertionId: invalid",
         "Invalid UUID string: invalid")

    body = error(client.request(method, path("invalid", str(uuid.uuid4()))))
    assert (body["statusCode"], body["type"], body["message"], body["details"]) == \
        (400, "InvalidArgument", "Can not deserialize the supplied group: invalid",
         "A serialized group must be a fully qualified name: invalid")


def test_an_unknown_group_name_is_400_on_every_group_route(client, ctx):
    for method, url in (("GET", path("invalid")), ("DELETE", path("invalid")),
                        ("POST", path("invalid") + "?action=reDeliver"),
                        ("POST", path("invalid", str(uuid.uuid4())) + "?action=reDeliver")):
        body = error(client.request(method, url))
        assert body["message"] == "Can not deserialize the supplied group: invalid", (method, url)


def test_james_group_forms_are_accepted(client, ctx):
    for name in ("org.apache.james.events.GenericGroup-abc", "org.apache.james.events.DispatchingFailureGroup-x",
                 "com.example.Listener$Group"):
        assert client.get(path(name)).status_code == 200, name


# -- deleting ---------------------------------------------------------------------------------
def test_delete_one_then_absent_is_still_204(client, ctx):
    a = group("A")
    insertion_id, _ = store(ctx, a)
    kept, _ = store(ctx, a)

    for _ in range(2):
        response = client.delete(path(a, str(insertion_id)))
        assert response.status_code == 204 and response.content == b""

    assert client.get(path(a, str(insertion_id))).status_code == 404
    assert client.get(path(a)).json() == [str(kept)]


def test_delete_a_group(client, ctx):
    a, b = group("A"), group("B")
    store(ctx, a)
    store(ctx, a)
    store(ctx, b)

    assert client.delete(path(a)).status_code == 204
    assert client.delete(path(group("Never"))).status_code == 204

    assert client.get(path(a)).json() == []
    assert client.get(f"{BASE}/groups").json() == [b]


# -- redelivery -------------------------------------------------------------------------------
def test_redeliver_all(client, ctx, listeners):
    a, b = listeners
    store(ctx, a.group)
    store(ctx, a.group)
    store(ctx, b.group)

    report = await_task(client, client.post(f"{BASE}?action=reDeliver"))

    assert report["type"] == "event-dead-letters-redeliver-all" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert set(info) == {"type", "timestamp", "successfulRedeliveriesCount", "failedRedeliveriesCount", "group",
                         "insertionId", "runningOptions"}
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "event-dead-letters-redeliver-all", "successfulRedeliveriesCount": 3, "failedRedeliveriesCount": 0,
        "group": None, "insertionId": None, "runningOptions": {"limit": None}}
    assert (len(a.handled), len(b.handled)) == (2, 1)
    assert client.get(f"{BASE}/groups").json() == []


def test_redeliver_all_with_a_limit(client, ctx, listeners):
    a, _ = listeners
    store(ctx, a.group)
    store(ctx, a.group)

    info = await_task(client, client.post(f"{BASE}?action=reDeliver&limit=1"))["additionalInformation"]

    assert (info["successfulRedeliveriesCount"], info["runningOptions"]) == (1, {"limit": 1})
    assert len(a.handled) == 1 and len(client.get(path(a.group)).json()) == 1


def test_limit_values(client, ctx):
    body = error(client.post(f"{BASE}?action=reDeliver&limit=invalid"))
    assert (body["message"], body["details"]) == ("Can not parse limit", 'For input string: "invalid"')
    assert error(client.post(f"{BASE}/groups/{group('A')}?action=reDeliver&limit=-1"))["message"] == \
        "limit can not be negative"
    # James's Limit.from: zero means no limit.
    info = await_task(client, client.post(f"{BASE}?action=reDeliver&limit=0"))["additionalInformation"]
    assert info["runningOptions"] == {"limit": None}


def test_redeliver_a_group(client, ctx, listeners):
    a, b = listeners
    store(ctx, a.group)
    store(ctx, a.group)
    kept, _ = store(ctx, b.group)

    report = await_task(client, client.post(path(a.group) + "?action=reDeliver&limit=5"))

    assert report["type"] == "event-dead-letters-redeliver-group" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert {k: v for k, v in info.items() if k != "timestamp"} == {
        "type": "event-dead-letters-redeliver-group", "successfulRedeliveriesCount": 2,
        "failedRedeliveriesCount": 0, "group": a.group, "insertionId": None, "runningOptions": {"limit": 5}}
    assert (len(a.handled), len(b.handled)) == (2, 0)
    assert client.get(path(a.group)).json() == [] and client.get(path(b.group)).json() == [str(kept)]


def test_redeliver_one(client, ctx, listeners):
    a, _ = listeners
    event = sample_added()
    insertion_id, _ = store(ctx, a.group, event)
    other, _ = store(ctx, a.group)

    report = await_task(client, client.post(path(a.group, str(insertion_id)) + "?action=reDeliver"))

    assert report["type"] == "event-dead-letters-redeliver-one" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert set(info) == {"type", "timestamp", "successfulRedeliveriesCount", "failedRedeliveriesCount", "group",
                         "insertionId"}
    assert (info["successfulRedeliveriesCount"], info["failedRedeliveriesCount"]) == (1, 0)
    assert (info["group"], info["insertionId"]) == (a.group, str(insertion_id))
    assert [e.event_id for e in a.handled] == [event.event_id]
    assert client.get(path(a.group)).json() == [str(other)]


def test_redeliver_one_absent_creates_a_task_that_redelivers_nothing(client, ctx, listeners):
    report = await_task(client, client.post(path(listeners[0].group, str(uuid.uuid4())) + "?action=reDeliver"))

    assert report["status"] == "completed"
    info = report["additionalInformation"]
    assert (info["successfulRedeliveriesCount"], info["failedRedeliveriesCount"]) == (0, 0)


def test_a_dispatching_failure_reaches_every_group(client, ctx, bus, listeners):
    a, b = listeners
    store(ctx, bus.names.dispatching_failure_group)

    report = await_task(client, client.post(f"{BASE}?action=reDeliver"))

    assert report["additionalInformation"]["successfulRedeliveriesCount"] == 1
    assert (len(a.handled), len(b.handled)) == (1, 1)


def test_a_listener_failing_again_makes_a_new_dead_letter(client, ctx, bus):
    broken = Recording(group("Broken"), fail_times=10**6)
    bus.register(broken)
    old, text = store(ctx, broken.group)

    info = await_task(client, client.post(path(broken.group) + "?action=reDeliver"))["additionalInformation"]

    # Published (the in-process bus ran the listener): the old letter goes, the new failure is kept.
    assert info["successfulRedeliveriesCount"] == 1
    [new] = client.get(path(broken.group)).json()
    assert new != str(old)
    assert json.loads(client.get(path(broken.group, new)).text) == json.loads(text)


class PublishFailing(InProcessEventBus):
    """Refuses to publish for the groups in ``failing`` (a broker that is down for them)."""

    def __init__(self, failing: set[str]) -> None:
        super().__init__(retries=0)
        self.failing = failing

    def redeliver(self, group: str, event_json: str) -> None:
        if group in self.failing:
            raise EventBusError(f"publish refused for {group}")
        super().redeliver(group, event_json)


def test_a_failed_publish_keeps_the_letter_and_the_task_fails():
    healthy, down = Recording(group("Healthy")), Recording(group("Down"))
    bus = PublishFailing({down.group})
    bus.register(healthy)
    bus.register(down)
    with event_bus_context(bus) as ctx:
        client = admin(ctx)
        kept, _ = store(ctx, down.group)
        store(ctx, healthy.group)

        report = await_task(client, client.post(f"{BASE}?action=reDeliver"))

        assert report["status"] == "failed"
        info = report["additionalInformation"]
        assert (info["successfulRedeliveriesCount"], info["failedRedeliveriesCount"]) == (1, 1)
        assert client.get(path(down.group)).json() == [str(kept)]
        assert down.handled == [] and len(healthy.handled) == 1
        assert client.get(f"{BASE}/groups").json() == [down.group]


def test_a_group_no_listener_runs_keeps_its_letter(client, ctx):
    orphan = group("Orphan")
    kept, _ = store(ctx, orphan)

    report = await_task(client, client.post(path(orphan, str(kept)) + "?action=reDeliver"))

    assert report["status"] == "failed"
    assert report["additionalInformation"]["failedRedeliveriesCount"] == 1
    assert client.get(path(orphan)).json() == [str(kept)]


@pytest.mark.parametrize("url", [BASE, f"{BASE}/groups/org.x.G",
                                 f"{BASE}/groups/org.x.G/244923a5-7f59-48c3-8900-a7be04a8d4df"])
def test_action_is_compulsory_and_must_be_redeliver(client, ctx, url):
    body = error(client.post(url))
    assert (body["statusCode"], body["type"], body["message"], body["details"]) == \
        (400, "InvalidArgument", "Invalid arguments supplied in the user request",
         f"'action' query parameter is compulsory. {ACTION_DETAILS}")
    body = error(client.post(f"{url}?action=invalid-action"))
    assert body["details"] == f"Invalid value supplied for query parameter 'action': invalid-action. {ACTION_DETAILS}"
    assert error(client.post(f"{url}?action=redeliver"))["statusCode"] == 400   # case-sensitive, as James


# -- not configured ---------------------------------------------------------------------------
def test_without_dead_letters_the_routes_answer_503_after_validation():
    client = admin(make_context())   # no event bus
    for method, url in (("GET", f"{BASE}/groups"), ("GET", path("org.x.G")), ("DELETE", path("org.x.G")),
                        ("POST", f"{BASE}?action=reDeliver")):
        body = error(client.request(method, url))
        assert (body["statusCode"], body["type"], body["message"]) == \
            (503, "ServerError", "The event dead letters store is not configured on this server")
    assert error(client.post(BASE))["statusCode"] == 400
    assert error(client.get(path("invalid")))["statusCode"] == 400


def test_without_a_task_manager_redelivery_answers_503():
    bus = InProcessEventBus()
    client = admin(make_context(dead_letters=bus.dead_letters, bus=bus))
    assert client.get(f"{BASE}/groups").json() == []
    assert error(client.post(f"{BASE}?action=reDeliver"))["message"] == \
        "The task manager is not configured on this server"
