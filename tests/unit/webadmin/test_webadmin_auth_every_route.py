"""Every operation the app publishes in ``/openapi.json`` is protected, with James's plain-text refusals.

The operations come from the published description (read anonymously, as a client would), so a
route added later is covered without touching this file. Which operations are public is decided
here, from James's list (health checks, ``/metrics``; the API description pages are not
operations), never from the code under test: a route that became public by mistake fails.

Password mode (``mailserver.webadmin.auth``): no credential and an unknown secret are 401; a
read-only secret may only GET and HEAD (403 otherwise, DELETE included); a no-delete secret may
do anything but DELETE (403). JWT mode: no header, an expired token, a token signed by another
key and a token without ``admin: true`` are all 401, as James's ``JwtFilter`` answers them.
"""

from __future__ import annotations

import re
import time
import warnings

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.blob.memory import MemoryBlobStore
from mailserver.dlp.store import DlpConfigurationStore
from mailserver.droplist.memory import MemoryDropList
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.identities.memory import MemoryCustomIdentityStore
from mailserver.identities.repository import IdentityRepository
from mailserver.mailbox.subscriptions import MemorySubscriptionStore
from mailserver.mailbox.wiring import memory_context
from mailserver.queue.memory import MemoryMailQueueFactory
from mailserver.repository.memory import MemoryMailRepositoryStore
from mailserver.rrt.can_send_from import CanSendFrom
from mailserver.serving.connections import ConnectionRegistry
from mailserver.sieve.quota import MemorySieveQuotas
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.vacation.memory import MemoryVacationRepository
from mailserver.webadmin.app import create_app
from mailserver.webadmin.auth import AuthConfig
from tests.support.schema_version_session import FakeSchemaSession
from tests.unit.webadmin.webadmin_support import FULL, NODELETE, READONLY, make_context

# James's public routes (webadmin reference §1.2), as published by this app.
PUBLIC = {("GET", "/healthcheck"), ("GET", "/healthcheck/checks"),
          ("GET", "/healthcheck/checks/{component_name}"), ("GET", "/metrics")}
DOC_PAGES = ("/openapi.json", "/docs")   # served, not described as operations

NO_PASSWORD, WRONG_PASSWORD = "No Password in header.", "Wrong password."
FORBIDDEN = "Insufficient permissions for this operation."
NO_BEARER, INVALID_BEARER, NOT_ADMIN = "No Bearer header.", "Invalid Bearer header.", "Non authorized user."
READ_METHODS = {"GET", "HEAD"}

# Every family of routes, the optional ones included: a router left out of the app shrinks the
# published description, and this test must not then pass on fewer operations.
FAMILIES = {"healthcheck", "metrics", "domains", "users", "address", "domainMappings", "mappings", "maintenance",
            "tasks", "mailQueues", "mailRepositories", "cassandra",
            "mailboxes", "messages", "quota",   # the maintenance procedures (Airflow DAG runs)
            "events",   # event dead letters and groups (503 without an event bus)
            "deletedMessages",   # the deleted messages vault (503 without it)
            "droplist", "sieve", "servers", "vacation", "dlp"}


def full_app(auth: AuthConfig | None = None):
    """The app with every optional part, so that every route is published (no worker: nothing runs)."""
    ctx = make_context(auth, queues=MemoryMailQueueFactory(), repositories=MemoryMailRepositoryStore(),
                       tasks=TaskManager(MemoryTaskStore(), "auth-node"),
                       mailboxes=memory_context(MemoryBlobStore()).manager, subscriptions=MemorySubscriptionStore(),
                       schema_versions=SchemaVersions(FakeSchemaSession(12), {}, 14),   # type: ignore[arg-type]
                       droplist=MemoryDropList(), sieve_quotas=MemorySieveQuotas(), connections=ConnectionRegistry(),
                       vacations=MemoryVacationRepository(), dlp=DlpConfigurationStore(MemoryEventStore()))
    ctx.identities = IdentityRepository(MemoryCustomIdentityStore(), CanSendFrom(ctx.rrt).addresses)
    return create_app(ctx)


def published_operations() -> list[tuple[str, str]]:
    response = TestClient(full_app()).get("/openapi.json")
    assert response.status_code == 200, "the API description must be public"
    return sorted((method.upper(), path) for path, item in response.json()["paths"].items() for method in item)


OPERATIONS = published_operations()
PROTECTED = [op for op in OPERATIONS if op not in PUBLIC]


def op_id(op: tuple[str, str]) -> str:
    return f"{op[0]} {op[1]}"


def concrete(path: str) -> str:
    # Authentication runs before routing: any value of a path parameter will do.
    return re.sub(r"\{[^}]+\}", "x", path)


def client_for(app) -> TestClient:
    return TestClient(app, raise_server_exceptions=False)


def call(client: TestClient, op: tuple[str, str], **headers: str):
    method, path = op
    return client.request(method, concrete(path), headers=headers)


def assert_refused(response, method: str, status: int, body: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("text/plain"), response.headers["content-type"]
    if method != "HEAD":   # a HEAD answer carries no body
        assert response.text == body


def assert_let_through(response) -> None:
    """Whatever the route answers (200, 400, 404 ...), it is not the authentication filter's refusal."""
    refused = response.status_code in (401, 403) and response.headers.get("content-type", "").startswith("text/plain")
    assert not refused, (response.status_code, response.text)


def test_the_description_covers_every_route_family_and_method():
    families = {path.split("/")[1] for _, path in OPERATIONS}
    assert families == FAMILIES
    assert {method for method, _ in PROTECTED} == {"GET", "HEAD", "PUT", "POST", "PATCH", "DELETE"}
    assert PUBLIC <= set(OPERATIONS), "a public route was renamed: update PUBLIC"
    assert len(PROTECTED) >= 60


# One app per mode for the module: what the let-through requests change (a domain, maintenance
# mode, a waiting task) never changes how the next request is authenticated.
@pytest.fixture(scope="module")
def password_app() -> TestClient:
    return client_for(full_app())


# -- password mode ----------------------------------------------------------------------------
@pytest.mark.parametrize("op", PROTECTED, ids=op_id)
def test_password_mode_protects(op, password_app):
    method, app = op[0], password_app
    assert_refused(call(app, op), method, 401, NO_PASSWORD)
    assert_refused(call(app, op, Password="not-a-configured-secret"), method, 401, WRONG_PASSWORD)
    assert_refused(call(app, op, Authorization="Bearer not-a-configured-secret"), method, 401, WRONG_PASSWORD)
    readonly = call(app, op, Password=READONLY)
    if method in READ_METHODS:
        assert_let_through(readonly)
    else:   # DELETE and every write
        assert_refused(readonly, method, 403, FORBIDDEN)
    nodelete = call(app, op, Password=NODELETE)
    if method == "DELETE":
        assert_refused(nodelete, method, 403, FORBIDDEN)
    else:
        assert_let_through(nodelete)
    assert_let_through(call(app, op, Password=FULL))


# -- JWT mode ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def keys():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    foreign = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key, public, foreign


def bearer(key, **claims) -> str:
    token = jwt.encode({"sub": "admin@d.tld", "exp": int(time.time()) + 300, **claims}, key, algorithm="RS256")
    return f"Bearer {token}"


@pytest.fixture(scope="module")
def jwt_app(keys) -> TestClient:
    return client_for(full_app(AuthConfig.jwt(keys[1])))


@pytest.mark.parametrize("op", PROTECTED, ids=op_id)
def test_jwt_mode_protects(op, keys, jwt_app):
    key, _, foreign = keys
    method, app = op[0], jwt_app
    assert_refused(call(app, op), method, 401, NO_BEARER)
    assert_refused(call(app, op, Password=FULL), method, 401, NO_BEARER)
    expired = bearer(key, admin=True, exp=int(time.time()) - 60)
    assert_refused(call(app, op, Authorization=expired), method, 401, INVALID_BEARER)
    assert_refused(call(app, op, Authorization=bearer(foreign, admin=True)), method, 401, INVALID_BEARER)
    for claims in ({}, {"admin": False}):
        assert_refused(call(app, op, Authorization=bearer(key, **claims)), method, 401, NOT_ADMIN)
    assert_let_through(call(app, op, Authorization=bearer(key, admin=True)))


# -- public -----------------------------------------------------------------------------------
@pytest.mark.parametrize("auth", ["password", "jwt"])
def test_public_operations_and_pages_need_no_credentials(auth, keys):
    client = client_for(full_app(AuthConfig.jwt(keys[1]) if auth == "jwt" else None))
    for op in sorted(PUBLIC):
        assert_let_through(call(client, op))
    for page in DOC_PAGES:
        assert client.get(page).status_code == 200, page
