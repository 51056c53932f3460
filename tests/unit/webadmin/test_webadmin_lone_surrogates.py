"""Text UTF-8 cannot carry (a lone surrogate, ``"\\ud800"`` in a JSON body), found by the fuzzers: quoted in
an error it is sent escaped, not a 500; a maintenance reason or a repository it would name is refused
with a 400, never stored to fail every later GET with a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.unit.webadmin.every_part_support import REPOSITORY, USER, every_part_client
from tests.unit.webadmin.webadmin_support import error

LONE = '"\\ud800"'   # JSON text of the string holding U+D800 alone


@pytest.fixture
def parts() -> Iterator[tuple[Any, Any]]:
    with every_part_client() as parts:
        yield parts


def refused(response) -> dict:
    assert response.status_code == 400, response.text
    return error(response)


@pytest.mark.parametrize("path", [f"/deletedMessages/users/{USER}/messages",
                                  f"/deletedMessages/users/{USER}?action=restore"])
def test_a_lone_surrogate_quoted_in_an_error_is_sent_escaped(parts, path):
    client, _ = parts
    body = refused(client.post(path, content=f'{{"fieldName":{LONE}}}'))
    assert body["details"] == "fieldName: '\\ud800' is not supported"


def test_a_maintenance_reason_with_a_lone_surrogate_is_refused_and_maintenance_stays_off(parts):
    client, _ = parts
    assert "reason" in refused(client.put("/maintenance", content=f'{{"reason":{LONE}}}'))["details"]
    state = client.get("/maintenance")
    assert state.status_code == 200 and state.json()["enabled"] is False


@pytest.mark.parametrize("target", [LONE, '"var/mail/a\\u0000b/"', '"bogus://var/mail/x/"'])
def test_moving_mails_to_a_repository_no_put_could_create_is_refused(parts, target):
    client, _ = parts
    before = client.get("/mailRepositories").json()
    refused(client.patch(f"/mailRepositories/{REPOSITORY}/mails", content=f'{{"mailRepository":{target}}}'))
    listing = client.get("/mailRepositories")
    assert listing.status_code == 200 and listing.json() == before
