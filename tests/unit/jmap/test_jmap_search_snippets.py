"""SearchSnippet/get (RFC 8621 5.1) through the memory index's highlighting, as James answers it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailserver.jmap.capabilities import CoreLimits
from mailserver.model.mailbox import MailboxPath
from mailserver.search.wiring import memory_search
from tests.support.jmap_world import MIXED, OTHER, JmapClient, World, mailbox_id, plain


@pytest.fixture
def jmap(world: World) -> JmapClient:
    return JmapClient(world, search=memory_search(world.mailbox))


@pytest.fixture
def mail(jmap, world) -> dict[str, str]:
    return {"foo": world.deliver(plain("The Foo report", "All about foo & bar <b>here</b>"), day=1),
            "other": world.deliver(plain("Lunch", "pizza at noon"), day=2),
            "quarterly": world.deliver(MIXED, day=3)}


def test_rfc_example_text_filter_highlights_subject_and_preview(jmap, mail):
    # RFC 8621 5.1's example: filter {text: "foo"} over several emails.
    answer = jmap.call("SearchSnippet/get", filter={"text": "foo"}, emailIds=[mail["foo"], mail["other"]])
    assert answer["list"] == [{"emailId": mail["foo"], "subject": "The <mark>Foo</mark> report",
                               "preview": "All about <mark>foo</mark> &amp; bar &lt;b&gt;here&lt;&#x2F;b&gt;"}]
    assert answer["notFound"] == [mail["other"]]   # as James: a non-matching email is not found


def test_a_match_outside_subject_and_body_has_null_fragments(jmap, mail):
    answer = jmap.call("SearchSnippet/get", filter={"text": "joe@example.com"}, emailIds=[mail["foo"]])
    assert answer["list"] == [{"emailId": mail["foo"], "subject": None, "preview": None}]
    assert answer["notFound"] == []


def test_body_condition_highlights_the_body_only_and_operators_nest(jmap, mail):
    answer = jmap.call("SearchSnippet/get", emailIds=[mail["foo"], mail["quarterly"]],
                       filter={"operator": "OR", "conditions": [{"body": "foo"}, {"subject": "quarterly"}]})
    by_id = {s["emailId"]: s for s in answer["list"]}
    assert by_id[mail["foo"]]["subject"] is None and "<mark>foo</mark>" in by_id[mail["foo"]]["preview"]
    assert by_id[mail["quarterly"]]["subject"].startswith("<mark>Quarterly</mark>")


def test_top_level_conditions_other_than_text_subject_body_are_left_out(jmap, world, mail):
    # As James: only text, subject and body count at the top; inMailbox here filters nothing out.
    answer = jmap.call("SearchSnippet/get", emailIds=[mail["foo"]],
                       filter={"inMailbox": mailbox_id(world, "Archive"), "subject": "foo"})
    assert [s["emailId"] for s in answer["list"]] == [mail["foo"]]


def test_without_filter_unknown_or_malformed_ids_are_not_found(jmap, mail):
    assert jmap.call("SearchSnippet/get", emailIds=[mail["foo"]]) == {
        "accountId": jmap.world.account, "list": [], "notFound": [mail["foo"]]}
    unknown = "00000000-0000-1000-8000-000000000000"
    answer = jmap.call("SearchSnippet/get", filter={"text": "foo"}, emailIds=["not-an-id", unknown])
    assert answer["list"] == [] and answer["notFound"] == ["not-an-id", unknown]


def test_another_users_email_is_not_found(jmap, world, mail):
    theirs = world.mailbox.manager.append(MailboxPath.of(OTHER, "INBOX"), plain("foo"),
                                          internal_date=datetime(2026, 11, 1, tzinfo=UTC))
    bobs = str(theirs.id.message_id)
    assert jmap.call("SearchSnippet/get", filter={"text": "foo"}, emailIds=[bobs])["notFound"] == [bobs]


@pytest.mark.parametrize("arguments, error", [
    ({"filter": {"text": "foo"}}, "invalidArguments"),                       # emailIds is required
    ({"filter": {"text": "foo"}, "emailIds": "x"}, "invalidArguments"),
    ({"filter": {"text": "foo"}, "emailIds": [], "extra": 1}, "invalidArguments"),
    ({"filter": {"allInThreadHaveKeyword": "$seen"}, "emailIds": []}, "unsupportedFilter"),
    ({"filter": {"operator": "XOR", "conditions": []}, "emailIds": []}, "invalidArguments"),
])
def test_errors(jmap, arguments, error):
    assert jmap.error("SearchSnippet/get", accountId=jmap.world.account, **arguments)["type"] == error


def test_too_many_ids_and_wrong_account(world):
    small = JmapClient(world, CoreLimits(max_objects_in_get=1), search=memory_search(world.mailbox))
    assert small.error("SearchSnippet/get", accountId=world.account, filter={"text": "a"},
                       emailIds=["a", "b"])["type"] == "requestTooLarge"
    assert small.error("SearchSnippet/get", accountId="nope", emailIds=[])["type"] == "accountNotFound"


def test_without_a_search_index_the_filter_is_unsupported(world):
    assert JmapClient(world).error("SearchSnippet/get", accountId=world.account, filter={"text": "a"},
                                   emailIds=[])["type"] == "unsupportedFilter"
