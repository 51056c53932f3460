"""Issue 16: what WebAdmin refuses to store (names, domains, oversized bodies), in James's error body."""

from __future__ import annotations

import pytest

from mailserver.model.address import Username
from mailserver.webadmin.json_body import MAX_BODY_BYTES
from tests.unit.webadmin.webadmin_support import error

BAD_USERNAMES = [
    "a%00b@d.tld",                 # NUL
    "a%07b@d.tld",                 # BEL
    "a%1Bb@d.tld",                 # ESC
    "al%E2%80%8Bice@d.tld",        # zero-width space (a format character)
    "%EF%BD%81lice@d.tld",         # fullwidth a: not NFKC-stable
    "alice@%EF%BD%84.tld",         # fullwidth d in the domain part
    "a(b@d.tld", "a:b@d.tld", "a;b@d.tld", "a<b@d.tld", "a%22b@d.tld", "a%5Cb@d.tld",   # James's illegal characters
    "x" * 65 + "@d.tld",           # local part over 64
    "alice@d.tld.",                # trailing dot in the domain part
]
# Stored (normalised into another name) before the rules.
BAD_DOMAINS = [
    "d.tld.",                      # trailing dot
    "%EF%BD%85xample.tld",         # fullwidth e (IDNA folded it into "example.tld")
    "exa%E2%80%8Bmple.tld",        # zero-width space (IDNA dropped it)
    "exa%C2%ADmple.tld",           # soft hyphen (IDNA dropped it)
]
# Refused before the rules too; kept here so the new checks cannot let them through.
STILL_REFUSED_DOMAINS = [
    ".d.tld", "a..tld",                                     # empty labels
    "exa%00mple.tld", "exa%09mple.tld", "exa%7Fmple.tld",   # NUL, TAB, DEL
    "exa%E2%80%AEmple.tld",                                 # right-to-left override
    "x" * 64 + ".tld",                                      # label over 63
    ".".join(["abcdefghi"] * 26),                           # 259 characters
    "a_.tld", "_a.tld",
]


@pytest.mark.parametrize("name", BAD_USERNAMES)
def test_user_names_that_are_not_stored(client, ctx, name):
    client.put("/domains/d.tld")
    body = error(client.put(f"/users/{name}", json={"password": "secret"}))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument")
    assert body["message"] == "Invalid arguments supplied in the user request"
    assert body["details"]
    assert list(ctx.users.list_users()) == []


def test_user_names_are_normalised(client, ctx):
    client.put("/domains/d.tld")
    assert client.put("/users/Alice.Smith+tag@D.TLD", json={"password": "secret"}).status_code == 204
    assert [u.value for u in ctx.users.list_users()] == ["alice.smith+tag@d.tld"]


@pytest.mark.parametrize("name", BAD_DOMAINS + STILL_REFUSED_DOMAINS)
def test_domains_that_are_not_stored(client, ctx, name):
    body = error(client.put(f"/domains/{name}"))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument")
    assert ctx.domains.list() == []


def test_domain_alias_sources_are_checked_too(client, ctx):
    client.put("/domains/d.tld")
    assert error(client.put("/domains/d.tld/aliases/alias.tld."))["statusCode"] == 400
    assert error(client.put("/domains/d.tld/aliases/%EF%BD%81lias.tld"))["statusCode"] == 400
    assert client.get("/domains/d.tld/aliases").json() == []


def test_domains_are_lower_cased(client, ctx):
    assert client.put("/domains/Mail.EXAMPLE.org").status_code == 204
    assert [d.name for d in ctx.domains.list()] == ["mail.example.org"]


def test_a_name_stored_before_the_rules_can_still_be_deleted(client, ctx):
    ctx.domains.add("d.tld")
    ctx.users.add_user(Username.of("a\x00b@d.tld"), "secret")   # written by an older version
    assert client.head("/users/a%00b@d.tld").status_code == 200
    assert client.delete("/users/a%00b@d.tld").status_code == 204
    assert list(ctx.users.list_users()) == []


def test_a_body_over_the_limit_is_413_and_never_stored(client, ctx):
    client.put("/domains/d.tld")
    big = b'{"password": "' + b"x" * (MAX_BODY_BYTES + 1) + b'"}'
    body = error(client.put("/users/bob@d.tld", content=big, headers={"Content-Type": "application/json"}))
    assert (body["statusCode"], body["type"]) == (413, "InvalidArgument")
    assert str(MAX_BODY_BYTES) in body["details"]
    assert list(ctx.users.list_users()) == []


def test_a_chunked_body_over_the_limit_is_413_too(client, ctx):
    client.put("/domains/d.tld")

    def chunks():
        yield b'{"password": "'
        for _ in range(3):
            yield b"x" * (MAX_BODY_BYTES // 2)
        yield b'"}'

    response = client.put("/users/bob@d.tld", content=chunks(), headers={"Content-Type": "application/json"})
    assert "content-length" not in {k.lower() for k in response.request.headers}
    body = error(response)
    assert (body["statusCode"], body["type"]) == (413, "InvalidArgument")
    assert list(ctx.users.list_users()) == []


def test_a_body_under_the_limit_is_read(client, ctx):
    client.put("/domains/d.tld")
    password = "p" * (MAX_BODY_BYTES - 100)
    assert client.put("/users/bob@d.tld", json={"password": password}).status_code == 204
    assert ctx.users.verify("bob@d.tld", password)
