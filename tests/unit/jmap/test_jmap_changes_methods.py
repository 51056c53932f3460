"""Mailbox/changes and Email/changes (RFC 8620 5.2, RFC 8621 2.2, 4.3) through the HTTP application,
the change listener writing the logs from the memory mailbox layer's events."""

from __future__ import annotations

import uuid

import pytest

from mailserver.jmap.changes.model import INITIAL, Change
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from tests.support.jmap_world import USER, World, mailbox_id, plain
from tests.support.jmap_world import JmapClient as Jmap

COUNTS = ["totalEmails", "unreadEmails", "totalThreads", "unreadThreads"]


@pytest.fixture
def jmap(world: World) -> Jmap:
    return Jmap(world)


def test_mailbox_changes_since_the_get_state_name_created_and_destroyed_mailboxes(jmap, world):
    state = jmap.call("Mailbox/get", ids=[])["state"]
    manager = world.mailbox.manager
    manager.create_mailbox(MailboxPath.of(USER, "Receipts"))
    archive = mailbox_id(world, "Archive")
    manager.delete_mailbox(MailboxPath.of(USER, "Archive"))
    created = mailbox_id(world, "Receipts")
    answer = jmap.call("Mailbox/changes", sinceState=state)
    assert answer["oldState"] == state and answer["created"] == [created] and answer["hasMoreChanges"] is False
    assert answer["destroyed"] == [archive] and answer["updated"] == []
    assert answer["updatedProperties"] is None
    assert answer["newState"] == jmap.call("Mailbox/get", ids=[])["state"] != state


def test_counts_only_changes_name_the_count_properties(jmap, world):
    state = jmap.call("Mailbox/get", ids=[])["state"]
    world.deliver(plain("one"))
    answer = jmap.call("Mailbox/changes", sinceState=state)
    assert answer["updated"] == [mailbox_id(world, "INBOX")] and answer["updatedProperties"] == COUNTS
    world.mailbox.manager.rename_mailbox(MailboxPath.of(USER, "Spam"), MailboxPath.of(USER, "Junk"))
    mixed = jmap.call("Mailbox/changes", sinceState=state)
    assert mixed["updatedProperties"] is None and len(mixed["updated"]) == 2


def test_email_changes_follow_delivery_keywords_and_destroy(jmap, world):
    state = jmap.call("Email/get", ids=[])["state"]
    first, second = world.deliver(plain("one")), world.deliver(plain("two"))
    answer = jmap.call("Email/changes", sinceState=state)
    assert set(answer["created"]) == {first, second} and answer["updated"] == answer["destroyed"] == []
    after = answer["newState"]
    assert after == jmap.call("Email/get", ids=[])["state"]
    jmap.call("Email/set", update={first: {"keywords/$seen": True}}, destroy=[second])
    answer = jmap.call("Email/changes", sinceState=after)
    assert (answer["updated"], answer["destroyed"], answer["created"]) == ([first], [second], [])
    assert jmap.call("Mailbox/changes", sinceState=jmap.call("Mailbox/get", ids=[])["state"])["updated"] == []


def test_a_deleted_flag_destroys_and_its_removal_creates_again(jmap, world):
    email = world.deliver(plain("one"))
    state = jmap.call("Email/get", ids=[])["state"]
    inbox = MailboxPath.of(USER, "INBOX")
    uid = world.mailbox.manager.get_messages(inbox)[0].uid
    world.mailbox.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, [uid])
    assert jmap.call("Email/changes", sinceState=state)["destroyed"] == [email]
    world.mailbox.manager.set_flags(inbox, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.REMOVE, [uid])
    assert jmap.call("Email/changes", sinceState=state)["destroyed"] == [email]   # James keeps it destroyed
    assert jmap.call("Email/changes", sinceState=state, maxChanges=1)["hasMoreChanges"] is True


def test_max_changes_pages_through_the_changes(jmap, world):
    state = jmap.call("Email/get", ids=[])["state"]
    delivered = [world.deliver(plain(f"m{i}")) for i in range(3)]
    seen: list[str] = []
    for _ in range(3):
        answer = jmap.call("Email/changes", sinceState=state, maxChanges=1)
        seen += answer["created"]
        state = answer["newState"]
        if not answer["hasMoreChanges"]:
            break
    assert seen == delivered


def test_the_initial_state_has_every_change_kept(jmap, world):
    answer = jmap.call("Mailbox/changes", sinceState=str(INITIAL))
    assert len(answer["created"]) == 8 and answer["newState"] == jmap.call("Mailbox/get", ids=[])["state"]


@pytest.mark.parametrize("method", ["Mailbox/changes", "Email/changes"])
def test_an_unknown_state_cannot_be_calculated(jmap, method):
    unknown = str(uuid.uuid1())
    error = jmap.error(method, accountId=jmap.world.account, sinceState=unknown)
    assert error == {"type": "cannotCalculateChanges", "description": f"State '{unknown}' could not be found"}


def test_a_single_change_past_max_changes_cannot_be_calculated(jmap, world):
    state = jmap.call("Email/get", ids=[])["state"]
    world.changes.emails.save(Change(USER, created=(uuid.uuid1(), uuid.uuid1())))   # a copy of two messages
    error = jmap.error("Email/changes", accountId=world.account, sinceState=state, maxChanges=1)
    assert error == {"type": "cannotCalculateChanges", "description": "Current change collector limit 1 is "
                     "exceeded by a single change, hence we cannot calculate changes."}


@pytest.mark.parametrize("arguments", [{"sinceState": 3}, {}, {"sinceState": "not-a-state"},
                                       {"sinceState": str(INITIAL), "maxChanges": 0},
                                       {"sinceState": str(INITIAL), "maxChanges": "5"},
                                       {"sinceState": str(INITIAL), "extra": 1}])
@pytest.mark.parametrize("method", ["Mailbox/changes", "Email/changes"])
def test_malformed_arguments_are_invalid_arguments(jmap, method, arguments):
    assert jmap.error(method, accountId=jmap.world.account, **arguments)["type"] == "invalidArguments"


@pytest.mark.parametrize("method", ["Mailbox/changes", "Email/changes"])
def test_another_account_is_account_not_found(jmap, method):
    assert jmap.error(method, accountId="other", sinceState=str(INITIAL))["type"] == "accountNotFound"


def test_email_set_states_are_the_email_log_states(jmap, world):
    email = world.deliver(plain("one"))
    state = jmap.call("Email/get", ids=[])["state"]
    answer = jmap.call("Email/set", ifInState=state, update={email: {"keywords/$flagged": True}})
    assert answer["oldState"] == state and answer["newState"] == jmap.call("Email/get", ids=[])["state"] != state
    assert jmap.call("Email/changes", sinceState=state)["updated"] == [email]
