"""Mailbox/queryChanges and Email/queryChanges: cannotCalculateChanges once the arguments are read,
as James answers Mailbox/queryChanges (it has no Email/queryChanges)."""

from __future__ import annotations

import pytest

from tests.support.jmap_world import JmapClient, World

METHODS = ["Mailbox/queryChanges", "Email/queryChanges"]


@pytest.fixture
def jmap(world: World) -> JmapClient:
    return JmapClient(world)


@pytest.mark.parametrize("method", METHODS)
def test_rfc_example_answers_cannot_calculate_changes(jmap, world, method):
    # RFC 8620 5.6's example call shape: a filter, a sort and the old queryState.
    error = jmap.error(method, accountId=world.account, filter={}, sort=[{"property": "receivedAt"}],
                       sinceQueryState="09aa9a075588-780599:0", maxChanges=50, upToId=None, calculateTotal=True)
    assert error == {"type": "cannotCalculateChanges", "description": f"Naive implementation for {method}"}


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("arguments, error", [
    ({}, "invalidArguments"),                                          # sinceQueryState is required
    ({"sinceQueryState": 1}, "invalidArguments"),
    ({"sinceQueryState": "s", "maxChanges": -1}, "invalidArguments"),
    ({"sinceQueryState": "s", "calculateTotal": "yes"}, "invalidArguments"),
    ({"sinceQueryState": "s", "upToId": 3}, "invalidArguments"),
    ({"sinceQueryState": "s", "filter": []}, "invalidArguments"),
    ({"sinceQueryState": "s", "other": 1}, "invalidArguments"),
])
def test_invalid_arguments(jmap, world, method, arguments, error):
    assert jmap.error(method, accountId=world.account, **arguments)["type"] == error


def test_email_filter_is_checked_as_email_query_checks_it(jmap, world):
    assert jmap.error("Email/queryChanges", accountId=world.account, sinceQueryState="s",
                      filter={"someInThreadHaveKeyword": "$seen"})["type"] == "unsupportedFilter"


@pytest.mark.parametrize("method", METHODS)
def test_wrong_account(jmap, method):
    assert jmap.error(method, accountId="nope", sinceQueryState="s")["type"] == "accountNotFound"
