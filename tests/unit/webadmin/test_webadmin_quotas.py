"""``/quota`` in process: users, domains and global limits with James's statuses and JSON
(UserQuotaRoutesTest, DomainQuotaRoutesTest, GlobalQuotaRoutesTest), read back from the quota
store, and their effect on the mailbox (a limit set here refuses an append).
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.mailbox.errors import OverQuota
from mailserver.model.address import Domain, Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot
from tests.unit.webadmin.mailbox_webadmin_support import add_user, mailbox_admin
from tests.unit.webadmin.webadmin_support import error

MESSAGE = b"From: a@example.test\r\nSubject: hi\r\n\r\nhello\r\n"
SIZE = len(MESSAGE)
INVALID_QUOTA = "Invalid quota. Need to be an integer value greater or equal to -1"
NOTHING = {"count": None, "size": None}
ZERO_OCCUPATION = {"size": 0, "count": 0, "ratio": {"size": 0.0, "count": 0.0, "max": 0.0}}


@pytest.fixture(scope="module")
def shared():
    """One app for the module (building it costs more than a test): each test has a domain of its own."""
    with mailbox_admin() as admin:
        yield admin


@pytest.fixture(autouse=True)
def no_global_limits(shared):
    shared.mailbox.quota.set_global_limits(QuotaLimits())
    yield
    shared.mailbox.quota.set_global_limits(QuotaLimits())


@pytest.fixture
def domain(shared) -> str:
    name = f"q{uuid.uuid4().hex[:10]}.test"
    shared.ctx.domains.add(name)
    return name


@pytest.fixture
def user(shared, domain) -> str:
    return str(add_user(shared.ctx.users, f"bob@{domain}"))


@pytest.fixture
def client(shared):
    return shared.client


@pytest.fixture
def store(shared):
    return shared.mailbox.quota


def user_key(user: str) -> LimitKey:
    return LimitKey.user(QuotaRoot.for_user(Username.of(user)))


def no_content(response) -> None:
    assert (response.status_code, response.content) == (204, b""), response.text


def append(shared, user: str, count: int = 1) -> None:
    inbox = MailboxPath.inbox(user)
    if not shared.mailbox.manager.mailbox_exists(inbox):
        shared.mailbox.manager.create_mailbox(inbox)
    for _ in range(count):
        shared.mailbox.manager.append(inbox, MESSAGE)


# ------------------------------------------------------------------ /quota/users/{u}
def test_user_details_by_default_set_nothing(client, user):
    assert client.get(f"/quota/users/{user}").json() == {
        "global": None, "domain": None, "user": None, "computed": NOTHING, "occupation": ZERO_OCCUPATION}


def test_user_details_show_each_scope_the_computed_limits_and_the_occupation(shared, client, store, user, domain):
    append(shared, user, 2)   # before the limits: the usage may be over them (ratio above 1)
    store.set_global_limits(QuotaLimits(count=22, size=1111))
    store.set_domain_limits(Domain.of(domain), QuotaLimits(count=23, size=34))
    store.set_limits(user_key(user), QuotaLimits(count=10))
    assert client.get(f"/quota/users/{user}").json() == {
        "global": {"count": 22, "size": 1111}, "domain": {"count": 23, "size": 34},
        "user": {"count": 10, "size": None}, "computed": {"count": 10, "size": 34},
        "occupation": {"size": 2 * SIZE, "count": 2,
                       "ratio": {"size": 2 * SIZE / 34, "count": 0.2, "max": 2 * SIZE / 34}}}


def test_unlimited_user_limits_lift_the_others_and_give_zero_ratios(shared, client, store, user):
    store.set_global_limits(QuotaLimits(count=1, size=1))
    no_content(client.put(f"/quota/users/{user}", json={"count": -1, "size": -1}))
    append(shared, user, 2)   # accepted: the user's -1 wins over the global limits
    body = client.get(f"/quota/users/{user}").json()
    assert (body["user"], body["computed"]) == ({"count": -1, "size": -1}, {"count": -1, "size": -1})
    assert body["occupation"] == {"size": 2 * SIZE, "count": 2, "ratio": {"size": 0.0, "count": 0.0, "max": 0.0}}


def test_a_zero_limit_gives_java_s_nan_and_infinity_ratios(shared, client, store, user):
    store.set_limits(user_key(user), QuotaLimits(count=0, size=0))
    assert client.get(f"/quota/users/{user}").json()["occupation"]["ratio"] == {
        "size": "NaN", "count": "NaN", "max": "NaN"}
    store.set_limits(user_key(user), QuotaLimits(count=None, size=None))
    append(shared, user)
    store.set_limits(user_key(user), QuotaLimits(count=0, size=None))
    assert client.get(f"/quota/users/{user}").json()["occupation"]["ratio"] == {
        "size": 0.0, "count": "Infinity", "max": "Infinity"}


def test_put_user_sets_both_and_null_or_absent_removes(client, store, user):
    no_content(client.put(f"/quota/users/{user}", json={"count": 52, "size": 42}))
    assert store.defined_limits(user_key(user)) == QuotaLimits(52, 42)
    no_content(client.put(f"/quota/users/{user}", json={"count": None, "size": 42}))
    assert store.defined_limits(user_key(user)) == QuotaLimits(None, 42)
    no_content(client.put(f"/quota/users/{user}", content=b"{}"))
    assert store.defined_limits(user_key(user)) == QuotaLimits()


@pytest.mark.parametrize("body", [{"count": -2, "size": 42}, {"count": 52, "size": -3}])
def test_put_user_below_minus_one_is_400_and_keeps_the_previous_limits(client, store, user, body):
    store.set_limits(user_key(user), QuotaLimits(52, 42))
    response = error(client.put(f"/quota/users/{user}", json=body))
    assert (response["statusCode"], response["type"], response["message"]) == (400, "InvalidArgument", INVALID_QUOTA)
    assert store.defined_limits(user_key(user)) == QuotaLimits(52, 42)


@pytest.mark.parametrize("body", [b"not json", b"", b"[1, 2]", b'{"count": 1, "sizes": 2}', b'{"count": "12"}',
                                  b'{"count": 1.5}', b'{"size": true}', b'{"count": 99999999999999999999}'])
def test_put_user_with_a_malformed_body_is_400_and_writes_nothing(client, store, user, body):
    response = error(client.put(f"/quota/users/{user}", content=body))
    assert (response["statusCode"], response["type"], response["message"]) == (
        400, "InvalidArgument", "JSON payload of the request is not valid")
    assert store.defined_limits(user_key(user)) == QuotaLimits()


@pytest.mark.parametrize(("method", "suffix", "body"), [
    ("get", "", None), ("put", "", b'{"count": 1}'), ("get", "/count", None), ("put", "/count", b"1"),
    ("delete", "/count", None), ("get", "/size", None), ("put", "/size", b"1"), ("delete", "/size", None)])
def test_unknown_user_is_404_and_writes_nothing(client, store, domain, method, suffix, body):
    ghost = f"ghost@{domain}"
    kwargs = {"content": body} if body is not None else {}
    assert error(getattr(client, method)(f"/quota/users/{ghost}{suffix}", **kwargs)) == {
        "statusCode": 404, "type": "notFound", "message": "User not found", "details": None}
    assert store.defined_limits(user_key(ghost)) == QuotaLimits()


@pytest.mark.parametrize("kind", ["count", "size"])
def test_user_count_and_size_are_bare_numbers_set_read_and_removed(client, store, user, kind):
    url = f"/quota/users/{user}/{kind}"
    no_content(client.get(url))
    no_content(client.put(url, content=b"42"))
    response = client.get(url)
    assert (response.status_code, response.text) == (200, "42")
    assert getattr(store.defined_limits(user_key(user)), kind) == 42
    no_content(client.put(url, content=b"-1"))
    assert client.get(url).text == "-1"
    no_content(client.delete(url))
    assert store.defined_limits(user_key(user)) == QuotaLimits()
    no_content(client.get(url))


def test_user_count_answers_the_computed_limit_as_james_code_does(client, store, user, domain):
    store.set_global_limits(QuotaLimits(count=12))
    assert client.get(f"/quota/users/{user}/count").text == "12"
    store.set_domain_limits(Domain.of(domain), QuotaLimits(count=7))
    assert client.get(f"/quota/users/{user}/count").text == "7"
    no_content(client.get(f"/quota/users/{user}/size"))


@pytest.mark.parametrize(("body", "details"), [(b"invalid", 'For input string: "invalid"'),
                                               (b"1.5", 'For input string: "1.5"'), (b" 42", 'For input string: " 42"'),
                                               (b"", 'For input string: ""'), (b"-2", None)])
def test_bare_values_other_than_whole_numbers_from_minus_one_are_400(client, store, user, body, details):
    for url in (f"/quota/users/{user}/count", f"/quota/users/{user}/size"):
        assert error(client.put(url, content=body)) == {
            "statusCode": 400, "type": "InvalidArgument", "message": INVALID_QUOTA, "details": details}
    assert store.defined_limits(user_key(user)) == QuotaLimits()


# ------------------------------------------------------------------ GET /quota/users
def test_users_are_filtered_by_domain_and_sorted(shared, client, domain):
    names = [str(add_user(shared.ctx.users, f"{local}@{domain}")) for local in ("carol", "alice", "bob")]
    body = client.get("/quota/users", params={"domain": domain}).json()
    assert [u["username"] for u in body] == sorted(names)
    assert body[0]["detail"] == {"global": None, "domain": None, "user": None, "computed": NOTHING,
                                 "occupation": ZERO_OCCUPATION}


def test_users_are_filtered_by_occupation_ratio_then_paged(shared, client, store, domain):
    store.set_domain_limits(Domain.of(domain), QuotaLimits(count=10))
    users = {}
    for local, messages in (("a", 1), ("b", 5), ("c", 8), ("d", 0)):
        users[local] = str(add_user(shared.ctx.users, f"{local}@{domain}"))
        append(shared, users[local], messages)

    def listed(**query) -> list[str]:
        response = client.get("/quota/users", params={"domain": domain, **query})
        assert response.status_code == 200, response.text
        return [u["username"] for u in response.json()]

    assert listed(minOccupationRatio="0.5") == [users["b"], users["c"]]     # inclusive, as James's scan
    assert listed(maxOccupationRatio="0.5") == [users["a"], users["b"], users["d"]]
    assert listed(minOccupationRatio="0.1", maxOccupationRatio="0.5") == [users["a"], users["b"]]
    assert listed(limit="2") == [users["a"], users["b"]]
    assert listed(offset="1", limit="2") == [users["b"], users["c"]]
    assert listed(offset="9") == []
    detail = client.get("/quota/users", params={"domain": domain, "minOccupationRatio": "0.8"}).json()
    assert detail == [{"username": users["c"], "detail": {
        "global": None, "domain": {"count": 10, "size": None}, "user": None, "computed": {"count": 10, "size": None},
        "occupation": {"size": 8 * SIZE, "count": 8, "ratio": {"size": 0.0, "count": 0.8, "max": 0.8}}}}]


@pytest.mark.parametrize(("query", "message", "details"), [
    ({"minOccupationRatio": "-1"}, "minOccupationRatio can not be negative", None),
    ({"minOccupationRatio": "invalid"}, "Can not parse minOccupationRatio", 'For input string: "invalid"'),
    ({"maxOccupationRatio": "-0.5"}, "maxOccupationRatio can not be negative", None),
    ({"maxOccupationRatio": "invalid"}, "Can not parse maxOccupationRatio", 'For input string: "invalid"'),
    ({"limit": "-1"}, "limit can not be negative", None), ({"limit": "0"}, "limit can not be equal to zero", None),
    ({"limit": "invalid"}, "Can not parse limit", 'For input string: "invalid"'),
    ({"offset": "-1"}, "offset can not be negative", None),
    ({"offset": "invalid"}, "Can not parse offset", 'For input string: "invalid"')])
def test_users_query_parameters_are_checked_as_james_does(client, query, message, details):
    assert error(client.get("/quota/users", params=query)) == {
        "statusCode": 400, "type": "InvalidArgument", "message": message, "details": details}


@pytest.mark.parametrize("query", [{"minOccupationRatio": "0"}, {"maxOccupationRatio": "0"}, {"offset": "0"}])
def test_users_query_accepts_zero_where_james_does(client, query):
    assert client.get("/quota/users", params=query).status_code == 200


def test_users_query_with_an_invalid_domain_is_400(client):
    assert error(client.get("/quota/users", params={"domain": "bad..domain"}))["statusCode"] == 400


# ------------------------------------------------------------------ /quota/domains/{d}
def test_domain_details_show_the_domain_the_global_and_the_computed_limits(client, store, domain):
    assert client.get(f"/quota/domains/{domain}").json() == {"global": NOTHING, "domain": NOTHING,
                                                              "computed": NOTHING}
    store.set_global_limits(QuotaLimits(count=100, size=5000))
    no_content(client.put(f"/quota/domains/{domain}", json={"count": 10, "size": None}))
    assert client.get(f"/quota/domains/{domain}").json() == {
        "global": {"count": 100, "size": 5000}, "domain": {"count": 10, "size": None},
        "computed": {"count": 10, "size": 5000}}
    assert store.defined_limits(LimitKey.domain(Domain.of(domain))) == QuotaLimits(10, None)


@pytest.mark.parametrize("kind", ["count", "size"])
def test_domain_count_and_size_are_the_domain_s_own(client, store, domain, kind):
    url = f"/quota/domains/{domain}/{kind}"
    store.set_global_limits(QuotaLimits(count=100, size=100))
    no_content(client.get(url))   # the global limit is not the domain's
    no_content(client.put(url, content=b"36"))
    assert (client.get(url).status_code, client.get(url).text) == (200, "36")
    assert error(client.put(url, content=b"-2"))["message"] == INVALID_QUOTA
    no_content(client.delete(url))
    assert store.defined_limits(LimitKey.domain(Domain.of(domain))) == QuotaLimits()


@pytest.mark.parametrize(("method", "suffix"), [("get", ""), ("put", ""), ("get", "/count"), ("put", "/count"),
                                                ("delete", "/size")])
def test_unknown_domain_is_404(client, method, suffix):
    kwargs = {"content": b"1" if suffix else b"{}"} if method == "put" else {}
    assert error(getattr(client, method)(f"/quota/domains/unknown-{uuid.uuid4().hex[:6]}.test{suffix}",
                                         **kwargs)) == {
        "statusCode": 404, "type": "notFound", "message": "Domain not found", "details": None}


def test_domain_routes_answer_405_without_virtual_hosting(domain):
    with mailbox_admin(virtual_hosting=False) as admin:
        admin.ctx.domains.add(domain)
        assert error(admin.client.get(f"/quota/domains/{domain}")) == {
            "statusCode": 405, "type": "WrongState",
            "message": "Domain Quota configuration not supported when virtual hosting is desactivated. "
                       "Please use global quota configuration instead", "details": None}
        assert admin.client.put(f"/quota/domains/{domain}/count", content=b"1").status_code == 405


# ------------------------------------------------------------------ /quota (global)
def test_global_limits_are_set_read_and_removed(client, store):
    assert client.get("/quota").json() == NOTHING
    no_content(client.put("/quota", json={"count": 12, "size": -1}))
    assert client.get("/quota").json() == {"count": 12, "size": -1}
    assert store.defined_limits(LimitKey.global_()) == QuotaLimits(12, -1)
    no_content(client.put("/quota", json={"count": None}))
    assert client.get("/quota").json() == NOTHING
    assert error(client.put("/quota", json={"count": -2}))["message"] == INVALID_QUOTA


@pytest.mark.parametrize("kind", ["count", "size"])
def test_global_count_and_size(client, store, kind):
    no_content(client.get(f"/quota/{kind}"))
    no_content(client.put(f"/quota/{kind}", content=b"1000"))
    assert client.get(f"/quota/{kind}").text == "1000"
    assert error(client.put(f"/quota/{kind}", content=b"abc"))["details"] == 'For input string: "abc"'
    no_content(client.delete(f"/quota/{kind}"))
    assert store.defined_limits(LimitKey.global_()) == QuotaLimits()


# ------------------------------------------------------------------ effect on the mailbox
def test_limits_set_here_are_the_ones_the_mailbox_enforces(shared, client, user, domain):
    no_content(client.put(f"/quota/domains/{domain}/count", content=b"1"))
    append(shared, user)
    with pytest.raises(OverQuota):
        append(shared, user)
    no_content(client.put(f"/quota/users/{user}/count", content=b"-1"))   # the user's unlimited wins
    append(shared, user)
    no_content(client.delete(f"/quota/users/{user}/count"))
    no_content(client.put("/quota/count", content=b"100"))   # the domain's still applies before the global
    with pytest.raises(OverQuota):
        append(shared, user)
