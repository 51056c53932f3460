"""A JSON body nested deeper than the interpreter's stack (found by the fuzzers) is a 400 "not valid", as
any malformed body, on every route that reads its body with ``java_numbers.loads``; it was a 500
RecursionError. Nothing is written."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from mailserver.model.java_numbers import loads
from mailserver.model.quota import LimitKey, QuotaLimits
from tests.unit.webadmin.every_part_support import DOMAIN, REPOSITORY, USER, every_part_client
from tests.unit.webadmin.webadmin_support import error

LEVELS = 100_000
ARRAYS = b"[" * LEVELS + b"]" * LEVELS
OBJECTS = b'{"count":' * LEVELS + b"1" + b"}" * LEVELS
ROUTES = [
    ("PATCH", "/mailQueues/spool?delayed=true"),
    ("PATCH", f"/mailRepositories/{REPOSITORY}/mails"),
    ("PUT", "/quota"), ("PUT", f"/quota/users/{USER}"), ("PUT", f"/quota/domains/{DOMAIN}"),
    ("POST", f"/deletedMessages/users/{USER}/messages"),
    ("POST", f"/deletedMessages/users/{USER}?action=restore"),
]


@pytest.fixture(scope="module")
def parts() -> Iterator[tuple[Any, Any]]:
    with every_part_client() as parts:
        yield parts


def test_loads_refuses_a_document_nested_past_the_stack_as_invalid_json():
    for document in (ARRAYS, OBJECTS):
        with pytest.raises(ValueError, match="nested too deeply"):
            loads(document)


@pytest.mark.parametrize("body", [ARRAYS, OBJECTS], ids=["arrays", "objects"])
@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_a_body_nested_past_the_stack_is_a_400_and_changes_nothing(parts, method, path, body):
    client, ctx = parts
    response = client.request(method, path, content=body)
    assert response.status_code == 400, response.text
    assert "nested too deeply" in f"{error(response)['message']} {error(response)['details']}"
    assert ctx.mailboxes.quota.defined_limits(LimitKey.global_()) == QuotaLimits()
    assert ctx.tasks.list() == []
