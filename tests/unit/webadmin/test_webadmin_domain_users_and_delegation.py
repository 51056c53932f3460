"""``GET /domains/{d}/users`` and delegation (``/users/{u}/authorizedUsers``), after James's
``DomainsRoutesTest`` and ``UserRoutesTest``: shapes, status codes and error bodies."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.model.address import Username
from mailserver.model.passwords import PasswordHasher
from mailserver.users.delegation import MemoryDelegationStore
from mailserver.users.memory import MemoryUsersRepository
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.conftest import TestClient
from tests.unit.webadmin.webadmin_support import FULL, cheap_users, error, make_context

ALICE, BOB, ANDRE = Username("alice@d.tld"), Username("bob@d.tld"), Username("andre@d.tld")


@pytest.fixture
def ctx():
    context = make_context()
    context.delegation = MemoryDelegationStore(cheap_users(context).contains)
    context.domains.add("d.tld")
    return context


def test_users_of_a_domain_are_listed_without_those_of_other_domains(client, ctx):
    assert client.get("/domains/d.tld/users").json() == []
    ctx.domains.add("other.tld")
    ctx.users.add_user("user1@d.tld", "secret")
    ctx.users.add_user("user2@d.tld", "secret")
    ctx.users.add_user("user3@other.tld", "secret")
    response = client.get("/domains/d.tld/users")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert sorted(response.json()) == ["user1@d.tld", "user2@d.tld"]


def test_users_of_an_unknown_domain_is_404_and_of_an_invalid_one_400(client):
    body = error(client.get("/domains/unknown.tld/users"))
    assert (body["type"], body["message"]) == ("notFound", "The domain list does not contain: unknown.tld")
    assert error(client.get("/domains/invalid@domain/users"))["type"] == "InvalidArgument"


def test_without_virtual_hosting_every_user_belongs_to_the_domain():
    domains = MemoryDomainList()
    domains.add("d.tld")
    users = MemoryUsersRepository(domains, virtual_hosting=False, hasher=PasswordHasher("PBKDF2-SHA512"))
    users.add_user("user1", "secret")
    users.add_user("user2", "secret")
    ctx = make_context()
    ctx.domains, ctx.users = domains, users
    client = TestClient(create_app(ctx), headers={"Password": FULL})
    assert sorted(client.get("/domains/d.tld/users").json()) == ["user1", "user2"]


def test_delegates_are_added_listed_and_kept_on_both_sides(client, ctx):
    for user in (ALICE, BOB, ANDRE):
        ctx.users.add_user(user, "secret")
    for delegate in (BOB, ANDRE):
        response = client.put(f"/users/{ALICE.value}/authorizedUsers/{delegate.value}")
        assert (response.status_code, response.text) == (200, "")
        assert response.headers["content-type"] == "application/json"
    assert sorted(client.get(f"/users/{ALICE.value}/authorizedUsers").json()) == [ANDRE.value, BOB.value]
    assert ctx.delegation.delegated_users(BOB) == [ALICE]


def test_a_delegate_who_is_not_a_user_is_authorized_but_not_told(client, ctx):
    ctx.users.add_user(ALICE, "secret")
    assert client.put(f"/users/{ALICE.value}/authorizedUsers/{BOB.value}").status_code == 200
    assert client.get(f"/users/{ALICE.value}/authorizedUsers").json() == [BOB.value]
    assert ctx.delegation.delegated_users(BOB) == []


def test_removing_a_delegate_is_idempotent_and_clears_both_sides(client, ctx):
    for user in (ALICE, BOB, ANDRE):
        ctx.users.add_user(user, "secret")
    ctx.delegation.add_authorized_user(ALICE, BOB)
    ctx.delegation.add_authorized_user(ALICE, ANDRE)
    for _ in range(2):
        assert client.delete(f"/users/{ALICE.value}/authorizedUsers/{BOB.value}").status_code == 200
    assert client.get(f"/users/{ALICE.value}/authorizedUsers").json() == [ANDRE.value]
    assert ctx.delegation.delegated_users(BOB) == []


def test_clearing_removes_every_delegate_and_is_idempotent(client, ctx):
    for user in (ALICE, BOB, ANDRE):
        ctx.users.add_user(user, "secret")
    ctx.delegation.add_authorized_user(ALICE, BOB)
    ctx.delegation.add_authorized_user(ALICE, ANDRE)
    for _ in range(2):
        assert client.delete(f"/users/{ALICE.value}/authorizedUsers").status_code == 200
    assert client.get(f"/users/{ALICE.value}/authorizedUsers").json() == []
    assert ctx.delegation.delegated_users(ANDRE) == []


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/users/alice@d.tld/authorizedUsers"), ("DELETE", "/users/alice@d.tld/authorizedUsers"),
    ("PUT", "/users/alice@d.tld/authorizedUsers/bob@d.tld"),
    ("DELETE", "/users/alice@d.tld/authorizedUsers/bob@d.tld")])
def test_an_unknown_base_user_is_404_and_nothing_is_written(client, ctx, method, path):
    body = error(client.request(method, path))
    assert (body["type"], body["message"]) == ("notFound", "User 'alice@d.tld' does not exist")
    assert ctx.delegation.authorized_users(ALICE) == []


def test_an_invalid_delegate_is_400_and_nothing_is_written(client, ctx):
    ctx.users.add_user(ALICE, "secret")
    assert error(client.put(f"/users/{ALICE.value}/authorizedUsers/a\u200bb@d.tld"))["type"] == "InvalidArgument"
    assert ctx.delegation.authorized_users(ALICE) == []


def test_without_a_delegation_store_the_routes_answer_james_s_405(ctx):
    ctx.delegation = None
    ctx.users.add_user(ALICE, "secret")
    client = TestClient(create_app(ctx), headers={"Password": FULL})
    body = error(client.get(f"/users/{ALICE.value}/authorizedUsers"))
    assert (body["statusCode"], body["message"]) == (405, "This version of James does not support delegation.")
