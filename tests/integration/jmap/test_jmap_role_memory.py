"""The jmap role served over HTTP (httpx, a real socket) on the memory mailbox layer: a client's
session from discovery to setting ``$seen``, seen as ``\\Seen`` through the mailbox manager."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import httpx
import pytest

from mailserver.jmap.account import MailServices
from mailserver.jmap.authentication import AuthenticationConfig
from mailserver.jmap.config import JmapConfig
from mailserver.jmap.uploads import MemoryUploadRepository
from mailserver.model.flags import SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.queue.memory import MemoryMailQueue
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from mailserver.runtime.roles import JmapRole
from mailserver.search.wiring import memory_search
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.security.throttle_config import AuthThrottleConfig
from tests.support.jmap_world import MIXED, USER, USING, World, basic, bearer, make_world, public_pem, signing_key
from tests.support.ports import unused_port
from tests.unit.smtp.smtp_helpers import self_signed


@pytest.fixture
def world() -> World:
    return make_world()


def start_role(world: World, **config) -> JmapRole:
    auth = AuthenticationConfig(basic=True, jwt_public_key=public_pem(signing_key()))
    role = JmapRole(JmapConfig(port=unused_port(), auth=auth, **config), world.users,
                    MailServices(world.mailbox.manager, world.mailbox.fast_view, world.subscriptions,
                                world.changes))
    role.start()
    return role


@pytest.fixture
def role(world: World) -> Iterator[JmapRole]:
    role = start_role(world)
    try:
        yield role
    finally:
        role.stop()


def test_a_client_discovers_the_session_reads_a_mail_and_marks_it_seen(world, role):
    email = world.deliver(MIXED)
    base = f"http://127.0.0.1:{role.port}"
    with httpx.Client(base_url=base, headers=basic(), timeout=10) as client:
        assert client.post("/jmap", headers={"Authorization": ""}, json={}).status_code == 401
        session = client.get("/jmap/session").json()
        api_url, account = session["apiUrl"], session["primaryAccounts"]["urn:ietf:params:jmap:mail"]
        assert api_url == f"{base}/jmap"

        def request(*calls):
            response = client.post(api_url, json={"using": USING, "methodCalls": list(calls)})
            assert response.status_code == 200, response.text
            return response.json()["methodResponses"]

        responses = request(
            ["Mailbox/query", {"accountId": account, "filter": {"role": "inbox"}}, "0"],
            ["Email/query", {"accountId": account,
                             "#filter": {"resultOf": "0", "name": "Mailbox/query", "path": "/ids/0"}}, "1"],
            ["Core/echo", {"ping": "pong"}, "2"])
        assert responses[1][0] == "error" and responses[1][1]["type"] == "invalidArguments"   # a filter is an object
        assert responses[2] == ["Core/echo", {"ping": "pong"}, "2"]
        inbox = responses[0][1]["ids"][0]
        responses = request(
            ["Email/query", {"accountId": account, "filter": {"inMailbox": inbox}}, "q"],
            ["Email/get", {"accountId": account, "properties": ["subject", "keywords", "preview"],
                           "#ids": {"resultOf": "q", "name": "Email/query", "path": "/ids"}}, "g"])
        assert responses[1][1]["list"] == [{"id": email, "subject": "Quarterly résults", "keywords": {},
                                            "preview": "The figures are in."}]
        updated = request(["Email/set", {"accountId": account, "update": {email: {"keywords/$seen": True}}}, "s"])
        assert updated[0][1]["updated"] == {email: None}
    stored = world.mailbox.manager.get_messages(MailboxPath.inbox(USER))
    assert [m.flags.has(SystemFlag.SEEN) for m in stored] == [True]


def test_a_bearer_token_reaches_the_same_account_and_the_role_reports_alive(world, role):
    base = f"http://127.0.0.1:{role.port}"
    assert role.alive()
    with httpx.Client(base_url=base, timeout=10) as client:
        assert client.get("/jmap/session", headers=bearer()).json()["username"] == USER
        assert client.get("/jmap/session").headers["www-authenticate"].startswith("Basic")
    role.stop()
    assert not role.alive()


def test_with_a_certificate_the_role_serves_https(world, tmp_path):
    cert, key = self_signed(tmp_path)
    role = start_role(world, tls_cert=str(cert), tls_key=str(key))
    try:
        port = role.port
        with httpx.Client(verify=False, timeout=10) as client:   # noqa: S501 - the test's self-signed certificate
            response = client.get(f"https://127.0.0.1:{port}/jmap/session", headers=bearer())
        assert response.status_code == 200 and response.json()["apiUrl"] == f"https://127.0.0.1:{port}/jmap"
        with pytest.raises(httpx.HTTPError), httpx.Client(timeout=5) as plain:
            plain.get(f"http://127.0.0.1:{port}/jmap/session", headers=bearer())
    finally:
        role.stop()


def test_the_role_serve_builds_reads_its_settings_and_the_processs_throttle(world, tmp_path):
    """``JmapRole.on`` as ``serve --roles jmap`` calls it: port and key from the environment, the
    mailbox layer, users, subscriptions, rewrite table, search index and authentication throttle of
    the process's backends, and the mailet container's spool for submissions."""
    key = tmp_path / "jwt.pub"
    key.write_text(public_pem(signing_key()))
    throttle = AuthThrottle(AuthThrottleConfig(delay=0, address_limit=1))
    backends = SimpleNamespace(mailbox=world.mailbox, users=world.users, subscriptions=world.subscriptions,
                               rrt=MemoryRecipientRewriteTable(), auth_throttle=throttle,
                               jmap_changes=world.changes, session=None, blobs=world.mailbox.blobs,
                               search=memory_search(world.mailbox), push_bus=world.mailbox.bus,
                               uploads=MemoryUploadRepository(world.mailbox.blobs))
    container = SimpleNamespace(context=SimpleNamespace(spool=MemoryMailQueue("spool")))
    port = unused_port()
    role = JmapRole.on(backends, {"MAILSERVER_JMAP_PORT": str(port), "MAILSERVER_JMAP_JWT_PUBLIC_KEY": str(key)},
                       container)
    role.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
            session = client.get("/jmap/session", headers=bearer()).json()
            assert session["username"] == USER
            assert "urn:ietf:params:jmap:submission" in session["capabilities"]
            text_query = ["Email/query", {"accountId": session["primaryAccounts"]["urn:ietf:params:jmap:mail"],
                                          "filter": {"text": "hello"}}, "q"]
            answer = client.post("/jmap", headers=bearer(), json={
                "using": USING, "methodCalls": [text_query]})
            assert answer.json()["methodResponses"][0][0] == "Email/query"   # answered by the search index
            assert client.get("/jmap/session", headers={"Authorization": "Bearer forged"}).status_code == 401
            assert client.get("/jmap/session", headers=bearer()).status_code == 429   # the shared throttle
    finally:
        role.stop()
