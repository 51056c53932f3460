"""RFC 8621's Mailbox and Email methods over the memory mailbox layer, through the HTTP application."""

from __future__ import annotations

import pytest

from mailserver.jmap.capabilities import CoreLimits
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from tests.support.jmap_world import MIXED, OTHER, USER, World, mailbox_id, plain
from tests.support.jmap_world import JmapClient as Jmap


@pytest.fixture
def jmap(world: World) -> Jmap:
    return Jmap(world)


# ---------------------------------------------------------------- Mailbox/get, Mailbox/query

def test_mailbox_get_lists_the_users_mailboxes_with_roles_counts_and_rights(jmap, world):
    world.deliver(plain("one"))
    second = world.deliver(plain("two"))
    inbox = MailboxPath.of(USER, "INBOX")
    uid = next(m.uid for m in world.mailbox.manager.get_messages(inbox) if str(m.message_id) == second)
    world.mailbox.manager.set_flags(inbox, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD, [uid])
    answer = jmap.call("Mailbox/get", ids=None)
    by_name = {m["name"]: m for m in answer["list"]}
    assert set(by_name) == {"INBOX", "Sent", "Drafts", "Trash", "Spam", "Archive", "Projects", "2026"}
    assert {n: m["role"] for n, m in by_name.items()} == {
        "INBOX": "inbox", "Sent": "sent", "Drafts": "drafts", "Trash": "trash", "Spam": "junk",
        "Archive": "archive", "Projects": None, "2026": None}
    inbox_json = by_name["INBOX"]
    assert (inbox_json["totalEmails"], inbox_json["unreadEmails"], inbox_json["isSubscribed"]) == (2, 1, True)
    assert inbox_json["myRights"]["maySetSeen"] is True and inbox_json["parentId"] is None
    assert by_name["2026"]["parentId"] == by_name["Projects"]["id"]
    assert answer["notFound"] == [] and answer["state"]
    assert OTHER not in str(answer)


def test_mailbox_get_by_ids_with_properties_answers_only_those_and_not_found(jmap, world):
    inbox = mailbox_id(world, "INBOX")
    answer = jmap.call("Mailbox/get", ids=[inbox, "missing"], properties=["name", "role"])
    assert answer["list"] == [{"id": inbox, "name": "INBOX", "role": "inbox"}]
    assert answer["notFound"] == ["missing"]


def test_the_mailbox_state_changes_with_the_mailboxes(jmap, world):
    before = jmap.call("Mailbox/get", ids=[])["state"]
    assert jmap.call("Mailbox/get", ids=[])["state"] == before
    world.deliver(plain("news"))
    assert jmap.call("Mailbox/get", ids=[])["state"] != before


def test_mailbox_query_filters_by_role_and_parent_and_sorts(jmap, world):
    assert jmap.call("Mailbox/query", filter={"role": "inbox"})["ids"] == [mailbox_id(world, "INBOX")]
    top = jmap.call("Mailbox/query", filter={"parentId": None, "hasAnyRole": False})["ids"]
    assert top == [mailbox_id(world, "Projects")]
    children = jmap.call("Mailbox/query", filter={"parentId": mailbox_id(world, "Projects")})
    assert children["ids"] == [mailbox_id(world, "Projects.2026")]
    by_name = jmap.call("Mailbox/query", sort=[{"property": "name", "isAscending": False}], limit=2,
                        calculateTotal=True)
    assert by_name["ids"] == [mailbox_id(world, "Trash"), mailbox_id(world, "Spam")]
    assert (by_name["total"], by_name["limit"], by_name["position"]) == (8, 2, 0)
    assert jmap.error("Mailbox/query", accountId=world.account, filter={"operator": "AND", "conditions": []})[
        "type"] == "unsupportedFilter"
    assert jmap.error("Mailbox/query", accountId=world.account, sort=[{"property": "totalEmails"}])[
        "type"] == "unsupportedSort"


# ---------------------------------------------------------------- Email/query

def test_email_query_in_a_mailbox_sorted_by_received_at_with_position_and_limit(jmap, world):
    ids = [world.deliver(plain(f"m{day}"), day=day) for day in (3, 1, 2)]
    world.deliver(plain("elsewhere"), mailbox="Archive", day=4)
    inbox = mailbox_id(world, "INBOX")
    oldest_first = [ids[1], ids[2], ids[0]]
    ascending = jmap.call("Email/query", filter={"inMailbox": inbox}, sort=[{"property": "receivedAt"}])
    assert ascending["ids"] == oldest_first and ascending["canCalculateChanges"] is False
    newest = jmap.call("Email/query", filter={"inMailbox": inbox},
                       sort=[{"property": "receivedAt", "isAscending": False}], position=1, limit=1,
                       calculateTotal=True)
    assert (newest["ids"], newest["position"], newest["total"]) == ([ids[2]], 1, 3)
    assert jmap.call("Email/query", filter={"inMailbox": inbox}, position=-1,
                     sort=[{"property": "receivedAt"}])["ids"] == [ids[0]]
    assert len(jmap.call("Email/query")["ids"]) == 4   # every mailbox, newest first by default
    assert jmap.call("Email/query", anchor=ids[2], anchorOffset=-1, filter={"inMailbox": inbox},
                     sort=[{"property": "receivedAt"}])["ids"] == [ids[1], ids[2], ids[0]]


def test_email_query_refuses_what_it_cannot_sort_or_filter(jmap, world):
    assert jmap.error("Email/query", accountId=world.account, sort=[{"property": "subject"}])[
        "type"] == "unsupportedSort"
    assert jmap.error("Email/query", accountId=world.account, filter={"text": "x"})["type"] == "unsupportedFilter"
    assert jmap.error("Email/query", accountId=world.account, anchor="nope")["type"] == "anchorNotFound"


# ---------------------------------------------------------------- Email/get

def test_email_get_answers_metadata_headers_preview_and_attachments(jmap, world):
    email = world.deliver(MIXED, day=5)
    answer = jmap.call("Email/get", ids=[email, "nope"])
    assert answer["notFound"] == ["nope"]
    got = answer["list"][0]
    assert (got["id"], got["blobId"], got["threadId"]) == (email, email, email)
    assert got["mailboxIds"] == {mailbox_id(world, "INBOX"): True}
    assert got["keywords"] == {}
    assert got["size"] == len(MIXED)
    assert got["receivedAt"] == "2026-11-05T12:00:00Z"
    assert got["subject"] == "Quarterly résults"
    assert got["from"] == [{"name": "Joe Bloggs", "email": "joe@example.com"}]
    assert got["to"] == [{"name": None, "email": "alice@jmap.test"}, {"name": "Bob", "email": "bob@jmap.test"}]
    assert got["cc"] == [{"name": None, "email": "carol@example.com"}]
    assert got["bcc"] is None
    assert (got["messageId"], got["inReplyTo"], got["references"]) == (["q1@example.com"], ["q0@example.com"], None)
    assert got["sentAt"] == "2026-11-03T10:00:00+01:00"
    assert got["preview"] == "The figures are in." and got["hasAttachment"] is True
    assert [p["type"] for p in got["textBody"]] == ["text/plain"]
    assert [p["type"] for p in got["htmlBody"]] == ["text/html"]
    assert [(p["type"], p["name"], p["disposition"]) for p in got["attachments"]] == [
        ("application/pdf", "q.pdf", "attachment")]
    assert got["bodyValues"] == {}


def test_email_get_body_values_when_asked_truncated_to_the_bytes_given(jmap, world):
    email = world.deliver(MIXED)
    got = jmap.call("Email/get", ids=[email], properties=["bodyValues", "textBody"], fetchTextBodyValues=True,
                    bodyProperties=["partId", "type"])["list"][0]
    assert got["textBody"] == [{"partId": "1", "type": "text/plain"}]
    # The line break before a boundary belongs to the boundary (RFC 2046 5.1.1).
    assert got["bodyValues"] == {"1": {"value": "The figures are in.", "isEncodingProblem": False,
                                       "isTruncated": False}}
    short = jmap.call("Email/get", ids=[email], properties=["bodyValues"], fetchAllBodyValues=True,
                      maxBodyValueBytes=7)["list"][0]
    assert short["bodyValues"]["1"] == {"value": "The fig", "isEncodingProblem": False, "isTruncated": True}
    assert short["bodyValues"]["2"]["value"] == "<p>The "
    assert set(short) == {"id", "bodyValues"}


def test_a_missing_fast_view_row_is_computed_and_stored_on_read(jmap, world):
    email = world.deliver(MIXED)
    fast_view = world.mailbox.fast_view
    message_id = world.mailbox.manager.get_messages(MailboxPath.inbox(USER))[0].message_id
    fast_view.delete(message_id)
    got = jmap.call("Email/get", ids=[email], properties=["preview", "hasAttachment"])["list"][0]
    assert (got["preview"], got["hasAttachment"]) == ("The figures are in.", True)
    assert fast_view.retrieve(message_id) == ("The figures are in.", True)


def test_email_get_does_not_show_another_users_message(jmap, world):
    theirs = world.mailbox.manager.append(MailboxPath.of(OTHER, "INBOX"), plain("private"))
    answer = jmap.call("Email/get", ids=[str(theirs.id.message_id)])
    assert answer["list"] == [] and answer["notFound"] == [str(theirs.id.message_id)]


def test_email_get_past_max_objects_in_get_is_request_too_large_before_reading(world):
    jmap = Jmap(world, CoreLimits(max_objects_in_get=2))
    assert jmap.error("Email/get", accountId=world.account, ids=["a", "b", "c"])["type"] == "requestTooLarge"
    for _ in range(3):
        world.deliver(plain("x"))
    assert jmap.error("Email/get", accountId=world.account, ids=None)["type"] == "requestTooLarge"
    assert jmap.error("Mailbox/get", accountId=world.account, ids=None)["type"] == "requestTooLarge"
    assert jmap.call("Email/get", ids=["a", "b"])["notFound"] == ["a", "b"]


# ---------------------------------------------------------------- method-level errors

@pytest.mark.parametrize("method", ["Mailbox/get", "Mailbox/query", "Email/get", "Email/query", "Email/set"])
def test_an_account_not_the_users_is_account_not_found(jmap, method):
    assert jmap.error(method, accountId="someone-else")["type"] == "accountNotFound"


@pytest.mark.parametrize(("method", "arguments"), [
    ("Mailbox/get", {"ids": "all"}), ("Mailbox/get", {"properties": ["colour"]}), ("Mailbox/get", {"bogus": 1}),
    ("Email/get", {"properties": ["id", "nope"]}), ("Email/query", {"limit": -1}),
    ("Email/query", {"filter": {"inMailbox": 3}}), ("Email/set", {"destroy": "x"}), ("Email/get", {}),
])
def test_malformed_arguments_are_invalid_arguments(jmap, world, method, arguments):
    if method != "Email/get" or arguments:
        arguments = {"accountId": world.account, **arguments}
    assert jmap.error(method, **arguments)["type"] == "invalidArguments"


def test_back_references_chain_query_into_get(jmap, world):
    emails = [world.deliver(plain(f"s{day}"), day=day) for day in (1, 2)]
    responses = jmap.calls(
        ["Email/query", {"accountId": world.account, "filter": {"inMailbox": mailbox_id(world, "INBOX")},
                         "sort": [{"property": "receivedAt", "isAscending": False}]}, "q"],
        ["Email/get", {"accountId": world.account, "properties": ["subject"],
                       "#ids": {"resultOf": "q", "name": "Email/query", "path": "/ids"}}, "g"],
        ["Email/get", {"accountId": world.account, "#ids": {"resultOf": "q", "name": "Mailbox/get", "path": "/ids"}},
         "bad"])
    assert [e["id"] for e in responses[1][1]["list"]] == emails[::-1]
    assert [e["subject"] for e in responses[1][1]["list"]] == ["s2", "s1"]
    assert responses[2][0] == "error" and responses[2][1]["type"] == "invalidResultReference"


# ---------------------------------------------------------------- Email/set

def test_email_set_keywords_are_imap_flags(jmap, world):
    email = world.deliver(plain("flag me"))
    inbox = MailboxPath.inbox(USER)
    state = jmap.call("Email/get", ids=[])["state"]
    answer = jmap.call("Email/set", ifInState=state, update={email: {"keywords/$seen": True, "keywords/Work": True}})
    assert answer["updated"] == {email: None} and answer["oldState"] == state != answer["newState"]
    flags = world.mailbox.manager.get_messages(inbox)[0].flags
    assert flags.has(SystemFlag.SEEN) and flags.user == {"work"}
    assert jmap.call("Email/get", ids=[email], properties=["keywords"])["list"][0]["keywords"] == {
        "$seen": True, "work": True}
    jmap.call("Email/set", update={email: {"keywords": {"$flagged": True}}})
    flags = world.mailbox.manager.get_messages(inbox)[0].flags
    assert flags.has(SystemFlag.FLAGGED) and not flags.has(SystemFlag.SEEN) and not flags.user


def test_email_set_refuses_per_item_and_on_a_stale_state(jmap, world):
    email = world.deliver(plain("x"))
    answer = jmap.call("Email/set", update={email: {"mailboxIds": {}}, "nope": {"keywords/$seen": True}},
                       create={"k1": {}})
    assert answer["notUpdated"][email]["type"] == "invalidProperties"
    assert answer["notUpdated"][email]["properties"] == ["mailboxIds"]
    assert answer["notUpdated"]["nope"]["type"] == "notFound"
    assert answer["notCreated"]["k1"]["type"] == "invalidProperties"   # no mailboxIds
    bad = jmap.call("Email/set", update={email: {"keywords/a(b": True}})
    assert bad["notUpdated"][email]["type"] == "invalidProperties"
    for refused in ({"subject": "x"}, {"mailboxIds": {"unknown": True}}, {"keywords": {}, "keywords/$seen": True},
                    {"mailboxIds/" + mailbox_id(world, "Trash"): True, "keywords/$seen": False}):
        result = jmap.call("Email/set", update={email: refused})
        assert result["notUpdated"][email]["type"] in ("invalidProperties", "invalidPatch"), refused
    assert [m.flags for m in world.mailbox.manager.get_messages(MailboxPath.inbox(USER))] == [Flags()]   # untouched
    assert world.mailbox.manager.get_messages(MailboxPath.of(USER, "Trash")) == []
    assert jmap.error("Email/set", accountId=world.account, ifInState="old", update={})["type"] == "stateMismatch"


def test_email_set_destroys_and_respects_max_objects_in_set(world):
    jmap = Jmap(world, CoreLimits(max_objects_in_set=1))
    email = world.deliver(plain("bye"))
    assert jmap.error("Email/set", accountId=world.account, destroy=[email, "x"])["type"] == "requestTooLarge"
    assert world.mailbox.manager.get_messages(MailboxPath.inbox(USER))   # nothing done
    assert jmap.call("Email/set", destroy=[email])["destroyed"] == [email]
    assert world.mailbox.manager.get_messages(MailboxPath.inbox(USER)) == []


def test_email_set_mailbox_ids_moves_copies_and_removes_through_the_manager(jmap, world):
    email = world.deliver(plain("move me"))
    inbox, archive, trash = (mailbox_id(world, n) for n in ("INBOX", "Archive", "Trash"))
    manager = world.mailbox.manager

    def held() -> set[str]:
        got = jmap.call("Email/get", ids=[email], properties=["mailboxIds"])["list"][0]
        return set(got["mailboxIds"])

    moved = jmap.call("Email/set", update={email: {"mailboxIds": {archive: True}}})
    assert moved["updated"] == {email: None} and held() == {archive}
    assert manager.get_messages(MailboxPath.inbox(USER)) == []
    jmap.call("Email/set", update={email: {f"mailboxIds/{trash}": True, "keywords/$seen": True}})
    assert held() == {archive, trash}
    assert all(m.flags.has(SystemFlag.SEEN) for m in manager.get_messages(MailboxPath.of(USER, "Trash")))
    jmap.call("Email/set", update={email: {f"mailboxIds/{archive}": None}})
    assert held() == {trash} and manager.get_messages(MailboxPath.of(USER, "Archive")) == []
    assert inbox not in held()
