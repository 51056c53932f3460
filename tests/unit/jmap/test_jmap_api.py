"""The JMAP HTTP application on the memory mailbox layer: authentication before any work, the
session resource, and the API's request-level errors and limits as HTTP answers."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from mailserver.jmap.app import create_app
from mailserver.jmap.authentication import AuthenticationConfig, Authenticator
from mailserver.jmap.capabilities import CoreLimits
from mailserver.jmap.concurrency import ConcurrentRequests, TooManyRequests
from mailserver.model.address import Username
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.security.throttle_config import AuthThrottleConfig
from tests.support.jmap_world import OTHER, USER, USING, World, basic, bearer, signing_key

CORE = "urn:ietf:params:jmap:core"
PROBLEM = "application/problem+json"


@pytest.fixture
def client(world: World) -> TestClient:
    return TestClient(create_app(world.context()), base_url="https://jmap.example")


def echo(client: TestClient, headers: dict[str, str], **extra) -> object:
    return client.post("/jmap", headers=headers, json={"using": [CORE], "methodCalls": [["Core/echo", extra, "c1"]]})


@pytest.mark.parametrize("headers", [{}, basic(password="wrong"), basic(user="nobody@jmap.test"),
                                     {"Authorization": "Basic !!!"}, {"Authorization": "Bearer x.y.z"},
                                     {"Authorization": "Digest x"}])
@pytest.mark.parametrize(("method", "path"), [("GET", "/jmap/session"), ("POST", "/jmap"), ("GET", "/download/a/b")])
def test_without_valid_credentials_every_route_answers_401_with_a_challenge(client, headers, method, path):
    response = client.request(method, path, headers=headers, content=b"not even json")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Basic realm="JMAP", Bearer realm="JMAP"'


def test_autodiscovery_redirects_to_the_session_without_credentials(client):
    response = client.get("/.well-known/jmap", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (302, "/jmap/session")
    assert client.get("/.well-known/jmap", headers=bearer()).json()["username"] == USER   # followed


def test_the_session_resource_names_the_account_capabilities_and_urls(client, world):
    response = client.get("/jmap/session", headers=bearer())
    assert response.status_code == 200
    session = response.json()
    core = session["capabilities"][CORE]
    assert (core["maxSizeRequest"], core["maxCallsInRequest"], core["maxObjectsInGet"],
            core["maxConcurrentRequests"]) == (10 * 1024 * 1024, 16, 500, 4)
    assert set(session["capabilities"]) == set(USING)
    account = session["accounts"][world.account]
    assert (account["name"], account["isPersonal"], account["isReadOnly"]) == (USER, True, False)
    assert account["accountCapabilities"]["urn:ietf:params:jmap:mail"]["emailQuerySortOptions"] == ["receivedAt"]
    assert session["primaryAccounts"] == {CORE: world.account, "urn:ietf:params:jmap:mail": world.account}
    assert session["username"] == USER
    assert session["apiUrl"] == "https://jmap.example/jmap"
    assert session["downloadUrl"] == "https://jmap.example/download/{accountId}/{blobId}?type={type}&name={name}"
    assert session["uploadUrl"] == "https://jmap.example/upload/{accountId}"
    assert session["eventSourceUrl"] == ("https://jmap.example/eventSource?types={types}&closeAfter={closeafter}"
                                         "&ping={ping}")   # James's template
    assert session["state"] and client.get("/jmap/session", headers=bearer()).json()["state"] == session["state"]


def test_the_api_echoes_and_reports_the_session_state(client):
    response = echo(client, bearer(), hello=True, high=5, list=[1, {"a": None}])
    assert response.status_code == 200
    body = response.json()
    assert body["methodResponses"] == [["Core/echo", {"hello": True, "high": 5, "list": [1, {"a": None}]}, "c1"]]
    assert body["sessionState"] == client.get("/jmap/session", headers=bearer()).json()["state"]


def test_each_request_level_error_is_a_problem_document(client):
    cases = {
        "urn:ietf:params:jmap:error:notJSON": client.post("/jmap", headers={**bearer(), "Content-Type":
                                                                            "application/json"}, content=b"{"),
        "urn:ietf:params:jmap:error:notRequest": client.post("/jmap", headers=bearer(), json={"using": []}),
        "urn:ietf:params:jmap:error:unknownCapability": client.post(
            "/jmap", headers=bearer(), json={"using": ["urn:ietf:params:jmap:calendars"], "methodCalls": []}),
    }
    for expected, response in cases.items():
        assert response.status_code == 400
        assert response.headers["content-type"] == PROBLEM
        assert response.json()["type"] == expected and response.json()["status"] == 400


def test_the_size_and_calls_limits_refuse_the_request_before_any_call_runs(world):
    client = TestClient(create_app(world.context(CoreLimits(max_size_request=200, max_calls_in_request=2))))
    large = client.post("/jmap", headers={**bearer(), "Content-Type": "application/json"},
                        content=json.dumps({"using": [CORE], "methodCalls": [["Core/echo", {"x": "y" * 300}, "c"]]}))
    assert large.status_code == 400
    assert (large.json()["type"], large.json()["limit"]) == ("urn:ietf:params:jmap:error:limit", "maxSizeRequest")
    many = client.post("/jmap", headers=bearer(), json={"using": [CORE], "methodCalls": [
        ["Core/echo", {}, "a"], ["Core/echo", {}, "b"], ["Core/echo", {}, "c"]]})
    assert (many.status_code, many.json()["limit"]) == (400, "maxCallsInRequest")


def test_a_streamed_body_past_the_size_limit_is_refused_without_its_length(world):
    client = TestClient(create_app(world.context(CoreLimits(max_size_request=100))))

    def chunks():
        for _ in range(10):
            yield b" " * 50

    response = client.post("/jmap", headers={**bearer(), "Content-Type": "application/json"}, content=chunks())
    assert (response.status_code, response.json()["limit"]) == (400, "maxSizeRequest")


def test_concurrent_requests_of_one_user_are_capped_per_user():
    slots = ConcurrentRequests(2)
    alice, bob = Username.of(USER), Username.of(OTHER)
    with slots.slot(alice), slots.slot(alice):
        with pytest.raises(TooManyRequests), slots.slot(alice):
            pass
        with slots.slot(bob):
            assert (slots.running(alice), slots.running(bob)) == (2, 1)
    assert slots.running(alice) == 0
    with slots.slot(alice):   # freed slots are usable again
        assert slots.running(alice) == 1


def test_the_api_refuses_a_request_past_max_concurrent_requests(world):
    """One request holds the only slot (its method blocks); the next one is refused at once."""
    limits = CoreLimits(max_concurrent_requests=1)
    context = world.context(limits)
    entered, release = threading.Event(), threading.Event()
    original = context.services.manager.list_mailboxes

    def blocking(user):
        entered.set()
        release.wait(10)
        return original(user)

    context.services.manager.list_mailboxes = blocking   # type: ignore[method-assign]
    client = TestClient(create_app(context))
    call = {"using": USING, "methodCalls": [["Mailbox/get", {"accountId": world.account}, "c1"]]}
    first = threading.Thread(target=lambda: client.post("/jmap", headers=bearer(), json=call))
    first.start()
    try:
        assert entered.wait(10)
        refused = echo(client, bearer())
        assert (refused.status_code, refused.json()["limit"]) == (400, "maxConcurrentRequests")
    finally:
        release.set()
        first.join(10)
    assert echo(client, bearer()).status_code == 200


def test_a_jwt_bearer_token_signed_by_the_configured_key_authenticates_its_subject(client):
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert client.get("/jmap/session", headers=bearer()).json()["username"] == USER
    for refused in (bearer(key=other), bearer("ghost@jmap.test"), bearer(exp=1),
                    {"Authorization": "Bearer " + jwt.encode({"x": 1}, signing_key(), algorithm="RS256")}):
        response = client.get("/jmap/session", headers=refused)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == 'Basic realm="JMAP", Bearer realm="JMAP"'


def test_basic_credentials_of_a_user_authenticate_them(client):
    assert client.get("/jmap/session", headers=basic()).json()["username"] == USER


def test_without_a_key_bearer_tokens_are_not_accepted(world):
    context = world.context()
    only_basic = Authenticator(AuthenticationConfig(basic=True), world.users)
    client = TestClient(create_app(replace(context, authenticator=only_basic)))
    response = client.get("/jmap/session", headers=bearer())
    assert (response.status_code, response.headers["www-authenticate"]) == (401, 'Basic realm="JMAP"')


def test_wrong_credentials_are_throttled_with_the_other_protocols_and_missing_ones_are_not(world):
    throttle = AuthThrottle(AuthThrottleConfig(delay=0, free_failures=10, address_limit=2))
    client = TestClient(create_app(replace(world.context(), throttle=throttle)))
    for _ in range(3):   # no credentials: nothing guessed, never refused
        assert client.get("/jmap/session").status_code == 401
    for _ in range(2):
        assert client.get("/jmap/session", headers={"Authorization": "Bearer forged"}).status_code == 401
    refused = client.get("/jmap/session", headers=bearer())
    assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
