"""``/droplist`` and ``/sieve/quota``, after James's ``DropListRoutesTest`` and ``SieveQuotaRoutesTest``."""

from __future__ import annotations

import pytest

from mailserver.droplist.api import DeniedEntityType, DropListEntry, OwnerScope
from mailserver.droplist.memory import MemoryDropList
from mailserver.model.address import MailAddress, Username
from mailserver.sieve.quota import MemorySieveQuotas
from tests.unit.webadmin.webadmin_support import cheap_users, error, make_context


@pytest.fixture
def ctx():
    context = make_context(droplist=MemoryDropList(), sieve_quotas=MemorySieveQuotas())
    context.domains.add("d.tld")
    cheap_users(context).add_user("alice@d.tld", "secret")
    return context


@pytest.mark.parametrize("base", ["/droplist/global", "/droplist/domain/target.com",
                                  "/droplist/user/target@target.com"])
def test_entries_of_each_scope_are_added_checked_listed_and_removed(client, base):
    for entity in ("attacker@evil.com", "evil.com"):
        assert client.put(f"{base}/{entity}").status_code == 204
        assert client.head(f"{base}/{entity}").status_code == 204
    assert sorted(client.get(base).json()) == ["attacker@evil.com", "evil.com"]
    assert client.get(base, params={"deniedEntityType": "domain"}).json() == ["evil.com"]
    assert client.get(base, params={"deniedEntityType": "ADDRESS"}).json() == ["attacker@evil.com"]
    for _ in range(2):   # idempotent
        assert client.delete(f"{base}/evil.com").status_code == 204
    assert client.head(f"{base}/evil.com").status_code == 404
    assert client.get(base).json() == ["attacker@evil.com"]


def test_scopes_and_owners_are_kept_apart(client):
    client.put("/droplist/domain/target.com/evil.com")
    assert client.get("/droplist/global").json() == []
    assert client.get("/droplist/domain/other.com").json() == []
    assert client.head("/droplist/user/target@target.com/evil.com").status_code == 404


def test_entries_are_stored_as_james_writes_them_and_found_under_the_spelling_given(client, ctx):
    assert client.put("/droplist/domain/Target.COM/Evil.COM").status_code == 204
    assert ctx.droplist.list(OwnerScope.DOMAIN, "target.com") == [
        DropListEntry(OwnerScope.DOMAIN, "target.com", DeniedEntityType.DOMAIN, "evil.com")]
    assert client.head("/droplist/domain/Target.COM/Evil.COM").status_code == 204
    assert ctx.droplist.blocks(OwnerScope.DOMAIN, "target.com", MailAddress.of("anyone@evil.com"))


@pytest.mark.parametrize(("method", "path", "message"), [
    ("GET", "/droplist/invalid", "Invalid OwnerScope"),
    ("PUT", "/droplist/invalid/evil.com", "Invalid OwnerScope"),
    ("HEAD", "/droplist/invalid/evil.com", None),
    ("DELETE", "/droplist/invalid/evil.com", "Invalid OwnerScope"),
    ("GET", "/droplist/global?deniedEntityType=invalid", "Invalid DeniedEntityType"),
    ("PUT", "/droplist/domain/target.com/a@b@evil.com", "Invalid mail address a@b@evil.com"),
    ("PUT", "/droplist/domain/target.com/evil..com", "Invalid domain evil..com"),
    ("PUT", "/droplist/user/not-an-address/evil.com", "Invalid mail address not-an-address"),
    ("PUT", "/droplist/domain/evil.com", "Invalid domain "),   # a domain scope needs its owner
])
def test_bad_input_is_james_s_400_and_writes_nothing(client, ctx, method, path, message):
    response = client.request(method, path)
    assert response.status_code == 400
    if message is not None:
        assert error(response)["message"] == message
    assert all(not ctx.droplist.list(scope, owner) for scope in OwnerScope
               for owner in ("", "target.com", "evil.com"))


def test_sieve_default_quota(client, ctx):
    assert client.get("/sieve/quota/default").status_code == 204
    assert client.put("/sieve/quota/default", content="102400").status_code == 204
    response = client.get("/sieve/quota/default")
    assert (response.status_code, response.json()) == (200, 102400)
    assert client.delete("/sieve/quota/default").status_code == 204
    assert client.delete("/sieve/quota/default").status_code == 204
    assert ctx.sieve_quotas.default() is None


def test_sieve_user_quota(client, ctx):
    assert client.get("/sieve/quota/users/alice@d.tld").status_code == 204
    assert client.put("/sieve/quota/users/alice@d.tld", content="2048").status_code == 204
    assert client.get("/sieve/quota/users/alice@d.tld").json() == 2048
    assert ctx.sieve_quotas.default() is None
    assert client.delete("/sieve/quota/users/alice@d.tld").status_code == 204
    assert ctx.sieve_quotas.of(Username("alice@d.tld")) is None


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_sieve_quota_of_an_unknown_user_is_404(client, method):
    body = error(client.request(method, "/sieve/quota/users/bob@d.tld", content="1"))
    assert body["message"] == "User bob@d.tld does not exist"


@pytest.mark.parametrize(("body", "message"), [
    ("-1", "Requested quota size have to be a positive integer"),
    ("abc", "unrecognized integer number 'abc'"), ("1.5", "unrecognized integer number '1.5'"),
    ("", "unrecognized integer number ''"), (str(2**63), f"unrecognized integer number '{2**63}'")])
def test_sieve_quota_bad_bodies_are_400_and_write_nothing(client, ctx, body, message):
    for path in ("/sieve/quota/default", "/sieve/quota/users/alice@d.tld"):
        assert error(client.put(path, content=body))["message"] == message
    assert ctx.sieve_quotas.default() is None
    assert ctx.sieve_quotas.of(Username("alice@d.tld")) is None
