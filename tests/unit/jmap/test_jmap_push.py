"""JMAP push: the StateChangeEvent on the bus, EventSource and WebSocket over a real uvicorn server.

One server (memory mailbox layer, in-process bus) serves the whole module: each test opens its
own connections and closes them. Reads are bounded by socket timeouts, never by sleeps.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import uvicorn
from websockets.sync.client import ClientConnection, connect

from mailserver.events.api import EventListener
from mailserver.events.registration_keys import account_key
from mailserver.jmap.app import create_app
from mailserver.jmap.push.event_source import sse
from mailserver.jmap.push.hub import PushHub, PushLimits, TooManyConnections
from mailserver.model.address import Username
from mailserver.model.event_json import deserialize_event, serialize_event
from mailserver.model.events import MailboxEvent
from mailserver.model.state_change import StateChangeEvent
from mailserver.serving.uvicorn_thread import UvicornThread
from tests.support.events import eventually
from tests.support.jmap_world import USING, World, bearer, make_world, plain

TIMEOUT = 10.0
EVENT_ID = "6e0dd59d-660e-4d9b-b22f-0354479f47b4"
# James's StateChangeEventSerializerTest.EVENT_JSON_NO_DELIVERY
JAMES_SAMPLE = {
    "type": "org.apache.james.jmap.change.StateChangeEvent",
    "eventId": EVENT_ID,
    "username": "bob",
    "typeStates": {"Mailbox": "2c9f1b12-b35a-43e6-9af2-0106fb53a943",
                   "Email": "2d9f1b12-b35a-43e6-9af2-0106fb53a943"},
}


class Server:
    def __init__(self, world: World, hub: PushHub) -> None:
        self.world, self.hub = world, hub
        app = create_app(replace(world.context(), push=hub))
        self.thread = UvicornThread(uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, ws="websockets-sansio",
                                                                  log_config=None, access_log=False)), "jmap-push")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.thread.port}"

    def websocket(self) -> ClientConnection:
        return connect(f"ws://127.0.0.1:{self.thread.port}/jmap/ws", subprotocols=["jmap"],  # type: ignore[list-item]
                       additional_headers=bearer(), open_timeout=TIMEOUT)


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    world = make_world()
    running = Server(world, PushHub(world.mailbox.bus, PushLimits(max_connections_per_user=2)))
    running.thread.start()
    yield running
    running.thread.stop()


class Recording(EventListener):
    def __init__(self) -> None:
        self.events: list[MailboxEvent] = []

    def handle(self, event: MailboxEvent) -> None:
        self.events.append(event)


def test_state_change_event_is_written_and_read_as_james_does() -> None:
    event = deserialize_event(json.dumps(JAMES_SAMPLE))

    assert isinstance(event, StateChangeEvent)
    assert json.loads(serialize_event(event)) == JAMES_SAMPLE


def test_state_change_event_skips_unknown_type_names_and_reads_the_previous_format() -> None:
    unknown = deserialize_event(json.dumps({**JAMES_SAMPLE, "typeStates": {
        **JAMES_SAMPLE["typeStates"], "FastForwardTypeName": "2d9f1b12-3333-4444-5555-0106fb53a943"}}))
    previous = deserialize_event(json.dumps({
        "eventId": EVENT_ID, "username": "bob", "type": "org.apache.james.jmap.change.StateChangeEvent",
        "emailState": "2c9f1b12-b35a-43e6-9af2-0106fb53a943", "mailboxState": "2c9f1b12-aaaa-bbbb-cccc-0106fb53a943"}))

    assert isinstance(unknown, StateChangeEvent) and isinstance(previous, StateChangeEvent)
    assert dict(unknown.type_states) == JAMES_SAMPLE["typeStates"]
    assert dict(previous.type_states) == {"Email": "2c9f1b12-b35a-43e6-9af2-0106fb53a943",
                                          "Mailbox": "2c9f1b12-aaaa-bbbb-cccc-0106fb53a943"}


def test_stored_changes_are_dispatched_to_the_account_key_with_their_states(world: World) -> None:
    recording = Recording()
    world.mailbox.bus.register_key(recording, account_key(world.user))

    world.deliver(plain("pushed"))

    (event,) = [e for e in recording.events if isinstance(e, StateChangeEvent)]
    assert event.user == world.user
    assert dict(event.type_states) == {
        "Email": str(world.changes.emails.latest_state(str(world.user))),
        "Mailbox": str(world.changes.mailboxes.latest_state(str(world.user)))}


def test_sse_frames_name_the_event_then_its_json() -> None:
    assert sse("ping", {"interval": 30}) == 'event: ping\ndata: {"interval":30}\n\n'


def test_ping_is_clamped_and_zero_keeps_it_off() -> None:
    limits = PushLimits(min_ping_seconds=5, max_ping_seconds=300)

    assert [limits.clamp_ping(s) for s in (0, 1, 60, 3600)] == [0, 5, 60, 300]


def _events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, data) of each server-sent event; comments are skipped."""
    name = ""
    for line in lines:
        if line.startswith("event: "):
            name = line.removeprefix("event: ")
        elif line.startswith("data: "):
            yield name, json.loads(line.removeprefix("data: "))


def test_event_source_sends_the_state_change_asked_for_then_closes_after_state(server: Server) -> None:
    url = f"{server.url}/eventSource?types=Email&closeAfter=state&ping=0"
    with httpx.stream("GET", url, headers=bearer(), timeout=TIMEOUT) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = response.iter_lines()
        assert next(lines) == ": connected"   # registered: what happens from now on is pushed
        server.world.deliver(plain("event source"))
        received = list(_events(lines))   # ends: closeAfter=state

    account = server.world.account
    assert received == [("state", {"@type": "StateChange", "changed": {account: {
        "Email": str(server.world.changes.emails.latest_state(str(server.world.user)))}}})]


@pytest.mark.parametrize("query", ["types=Email&ping=0", "types=Email&closeAfter=no", "closeAfter=no&ping=0",
                                   "types=Nope&closeAfter=no&ping=0", "types=*&closeAfter=maybe&ping=0",
                                   "types=*&closeAfter=no&ping=-1"])
def test_event_source_refuses_missing_or_bad_parameters(server: Server, query: str) -> None:
    response = httpx.get(f"{server.url}/eventSource?{query}", headers=bearer(), timeout=TIMEOUT)

    assert response.status_code == 400
    assert response.json()["status"] == 400


def test_event_source_needs_authentication(server: Server) -> None:
    response = httpx.get(f"{server.url}/eventSource?types=*&closeAfter=no&ping=0", timeout=TIMEOUT)

    assert response.status_code == 401


def test_push_connections_of_a_user_are_capped_and_the_key_leaves_with_the_last(server: Server) -> None:
    url = f"{server.url}/eventSource?types=*&closeAfter=no&ping=0"
    with httpx.stream("GET", url, headers=bearer(), timeout=TIMEOUT) as first, \
            httpx.stream("GET", url, headers=bearer(), timeout=TIMEOUT) as second:
        first_lines, second_lines = first.iter_lines(), second.iter_lines()   # kept: dropping one closes it
        assert next(first_lines) == next(second_lines) == ": connected"
        refused = httpx.get(url, headers=bearer(), timeout=TIMEOUT)
        assert account_key(server.world.user) in server.world.mailbox.bus.key_listeners.keys()

    assert refused.status_code == 400
    assert refused.json()["limit"] == "maxPushConnections"
    # The server sees the streams closed a moment later.
    eventually(lambda: server.hub.open_connections(server.world.user) == 0, timeout=TIMEOUT)
    assert account_key(server.world.user) not in server.world.mailbox.bus.key_listeners.keys()


def test_push_connections_of_all_users_together_are_capped(server: Server) -> None:
    hub = PushHub(server.world.mailbox.bus, PushLimits(max_connections_per_user=10, max_connections=2))
    amy, bob, cat = (Username.of(f"{name}@push.test") for name in ("amy", "bob", "cat"))

    async def three_users() -> None:
        async with hub.connect(amy), hub.connect(bob):
            assert hub.refusal(cat) is not None
            with pytest.raises(TooManyConnections):
                async with hub.connect(cat):
                    pass
        assert hub.refusal(cat) is None, "closed connections make room again"

    asyncio.run(three_users())


def test_websocket_answers_a_request_with_its_id(server: Server) -> None:
    with server.websocket() as socket:
        assert socket.subprotocol == "jmap"
        socket.send(json.dumps({"@type": "Request", "id": "req-1", "using": USING,
                                "methodCalls": [["Core/echo", {"hello": "world"}, "c1"]]}))
        answer = json.loads(socket.recv(timeout=TIMEOUT))

    assert answer["@type"] == "Response"
    assert answer["requestId"] == "req-1"
    assert answer["methodResponses"] == [["Core/echo", {"hello": "world"}, "c1"]]
    assert "sessionState" in answer


def test_websocket_pushes_state_changes_between_enable_and_disable(server: Server) -> None:
    echo = {"@type": "Request", "id": "after", "using": USING, "methodCalls": [["Core/echo", {}, "c"]]}
    with server.websocket() as socket:
        socket.send(json.dumps({"@type": "WebSocketPushEnable", "dataTypes": ["Mailbox"]}))
        socket.send(json.dumps(echo))   # answered once push is enabled: messages are handled in order
        assert json.loads(socket.recv(timeout=TIMEOUT))["requestId"] == "after"
        server.world.deliver(plain("websocket"))
        pushed = json.loads(socket.recv(timeout=TIMEOUT))
        mailbox_state = str(server.world.changes.mailboxes.latest_state(str(server.world.user)))
        socket.send(json.dumps({"@type": "WebSocketPushDisable"}))
        socket.send(json.dumps(echo))
        assert json.loads(socket.recv(timeout=TIMEOUT))["requestId"] == "after"
        server.world.deliver(plain("not pushed"))
        socket.send(json.dumps(echo))
        after_disable = json.loads(socket.recv(timeout=TIMEOUT))

    assert pushed == {"@type": "StateChange", "changed": {server.world.account: {"Mailbox": mailbox_state}}}
    assert after_disable["@type"] == "Response"   # no StateChange came before it


def test_websocket_refuses_an_unknown_message_type(server: Server) -> None:
    with server.websocket() as socket:
        socket.send(json.dumps({"@type": "Nope"}))
        answer = json.loads(socket.recv(timeout=TIMEOUT))

    assert answer["@type"] == "RequestError"
    assert answer["status"] == 400


def test_session_advertises_the_websocket(server: Server) -> None:
    session = httpx.get(f"{server.url}/jmap/session", headers=bearer(), timeout=TIMEOUT).json()

    assert session["capabilities"]["urn:ietf:params:jmap:websocket"] == {
        "url": f"ws://127.0.0.1:{server.thread.port}/jmap/ws", "supportsPush": True}
