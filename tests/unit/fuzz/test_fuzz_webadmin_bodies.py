"""Fuzzing every WebAdmin route that reads a request body (memory adapters, every administered part
present): whatever the body and its content type, the answer is a 2xx, or a 4xx in James's error
shape, never a 5xx; and what it stored leaves every GET that reads it back answering below 500.

The routes are called on entities that exist (a domain, a user with an INBOX, a mail queue, a mail
repository), so a body gets past the path's checks to the code that reads it. Tasks are submitted but
never run (no worker): what is fuzzed is the request, not the task. Maintenance mode, which a valid
``PUT /maintenance`` switches on, is switched off after each request, as the next one expects.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.unit.fuzz.profiles import budget
from tests.unit.fuzz.webadmin_inputs import bodies, content_types, shaped
from tests.unit.webadmin.every_part_support import DOMAIN, REPOSITORY, USER, every_part_client
from tests.unit.webadmin.webadmin_support import error

# (method, path, the shape of its body in webadmin_inputs.SHAPES)
ROUTES = [
    ("PUT", f"/users/{USER}", "user"), ("PUT", f"/users/new@{DOMAIN}", "user"),
    ("POST", f"/users/{USER}/verify", "user"),
    ("PUT", "/mappings", "mappings"), ("PUT", f"/domainMappings/{DOMAIN}", "text"),
    ("DELETE", f"/domainMappings/{DOMAIN}", "text"), ("PUT", "/maintenance", "maintenance"),
    ("PATCH", "/mailQueues/spool?delayed=true", "flush"), ("POST", "/mailQueues/spool?delayed=true", "flush"),
    ("PATCH", f"/mailRepositories/{REPOSITORY}/mails", "move"),
    ("PATCH", f"/mailRepositories/{REPOSITORY}/mails/some-key", "move"),
    ("PUT", "/quota", "quota"), ("PUT", f"/quota/users/{USER}", "quota"), ("PUT", f"/quota/domains/{DOMAIN}", "quota"),
    ("PUT", "/quota/count", "text"), ("PUT", "/quota/size", "text"), ("PUT", f"/quota/users/{USER}/count", "text"),
    ("PUT", f"/quota/users/{USER}/size", "text"), ("PUT", f"/quota/domains/{DOMAIN}/count", "text"),
    ("PUT", f"/quota/domains/{DOMAIN}/size", "text"), ("POST", f"/deletedMessages/users/{USER}/messages", "vault"),
    ("POST", f"/deletedMessages/users/{USER}?action=restore", "vault"),
    ("POST", f"/deletedMessages/users/{USER}?action=export&exportTo=postmaster@{DOMAIN}", "vault"),
    ("POST", "/cassandra/version/upgrade", "text"),
]

# What the routes above write is read back by these: a value stored that they cannot answer is a 5xx for
# every later caller, not only for the request that stored it.
VIEWS = ["/maintenance", "/mailRepositories", f"/mailRepositories/{REPOSITORY}/mails", "/mappings", "/domainMappings",
         "/users", "/quota", f"/quota/users/{USER}", f"/quota/domains/{DOMAIN}", "/tasks"]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with every_part_client() as (client, _):
        yield client


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, bytes]:
    method, path, shape = draw(st.sampled_from(ROUTES))
    return method, path, draw(st.one_of(shaped(shape), shaped(shape), bodies))


@budget(200)
@given(request=requests(), content_type=content_types)
def test_every_body_gets_a_2xx_or_a_4xx_in_james_shape(client, request, content_type):
    method, path, body = request
    headers = {"Content-Type": content_type} if content_type else {}
    try:
        response = client.request(method, path, content=body, headers=headers)
        assert response.status_code < 500, \
            f"{method} {path} {body[:200]!r} -> {response.status_code} {response.text[:300]}"
        if response.status_code >= 400:
            error(response)
        for view in VIEWS:
            answer = client.get(view)
            assert answer.status_code < 500, f"after {method} {path} {body[:200]!r}: GET {view} -> {answer.text[:300]}"
    finally:
        client.delete("/maintenance")
