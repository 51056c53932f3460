"""Each inconsistency of the operator guide, produced through the fault seam and seen with CQL.

A write fails between two others exactly where production would fail (a timeout on one table),
through the production code path; the assertions read the tables with plain CQL.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.cassandra.faults import InjectedWriteFailure
from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot
from tests.contract.mailbox_contract import message

pytestmark = pytest.mark.integration


@pytest.fixture
def user() -> Username:
    return Username.of(f"i{uuid.uuid4().hex[:10]}@example.com")


def test_mailbox_row_missing_for_a_registered_path(mailbox_ctx, cassandra, faults, user):
    faults.fail("mailbox", kind="INSERT")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.create_mailbox(MailboxPath.of(user, "Orphan"))

    path_rows = cassandra.execute("SELECT mailboxId FROM mailboxPathV3 WHERE namespace = '#private' AND user = ?",
                                  (str(user),))
    assert len(path_rows) == 1
    assert cassandra.execute("SELECT id FROM mailbox WHERE id = ?", (path_rows[0]["mailboxid"],)) == []


def test_a_lookup_by_path_writes_the_row_a_cut_short_creation_left_out(mailbox_ctx, cassandra, s3_blobs, faults,
                                                                        user):
    path = MailboxPath.inbox(user)
    faults.fail("mailbox", kind="INSERT")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.create_mailbox(path)
    restarted = cassandra_context(cassandra, s3_blobs)     # another process: nothing remembered

    found = restarted.manager.get_mailbox(path)

    row = cassandra.one("SELECT mailboxbase, name, uidvalidity FROM mailbox WHERE id = ?", (found.id.value,))
    assert row is not None and row["name"] == "INBOX" and row["mailboxbase"].user == str(user)
    assert row["uidvalidity"] == found.uid_validity
    assert restarted.manager.get_mailbox_by_id(found.id) == found     # search, IMAP: found by id too


def test_a_lookup_that_cannot_write_the_missing_row_still_answers_and_the_next_one_writes_it(
        mailbox_ctx, cassandra, faults, user):
    store = CassandraMailboxStore(cassandra)
    path = MailboxPath.of(user, "Later")
    faults.fail("mailbox", kind="INSERT", times=2)      # the creation's row, then the first repair

    with pytest.raises(InjectedWriteFailure):
        store.create(path, 43)
    first = store.find_by_path(path)
    second = store.find_by_path(path)

    assert first == second == store.path_entry(path)
    assert store.find_by_id(first.id) == first


def test_a_lookup_racing_a_deletion_leaves_no_row_behind(mailbox_ctx, cassandra, faults, user):
    """The row written for a path entry is removed again when the entry is gone by then (a deletion)."""
    store = CassandraMailboxStore(cassandra)
    path = MailboxPath.of(user, "Doomed")
    faults.fail("mailbox", kind="INSERT")
    with pytest.raises(InjectedWriteFailure):
        store.create(path, 42)
    entry = store.path_entry(path)
    store.delete(entry)                                        # the path goes first, as in a deletion

    assert store.finish_creation(entry) is False
    assert cassandra.one("SELECT id FROM mailbox WHERE id = ?", (entry.id.value,)) is None


def test_rename_interrupted_leaves_two_paths_for_one_mailbox(mailbox_ctx, cassandra, faults, user):
    mailbox_id = mailbox_ctx.manager.create_mailbox(MailboxPath.of(user, "Before"))
    faults.fail("mailboxPathV3", kind="DELETE")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.rename_mailbox(MailboxPath.of(user, "Before"), MailboxPath.of(user, "After"))

    rows = cassandra.execute("SELECT mailboxName, mailboxId FROM mailboxPathV3 WHERE namespace = '#private' "
                             "AND user = ?", (str(user),))
    assert {(r["mailboxname"], r["mailboxid"]) for r in rows} == {("Before", mailbox_id.value),
                                                                  ("After", mailbox_id.value)}
    assert cassandra.one("SELECT name FROM mailbox WHERE id = ?", (mailbox_id.value,))["name"] == "After"


def test_message_in_imap_uid_table_but_not_in_message_id_table(mailbox_ctx, cassandra, faults, user):
    inbox = MailboxPath.inbox(user)
    mailbox_id = mailbox_ctx.manager.create_mailbox(inbox)
    faults.fail("messageIdTable", kind="UPDATE")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.append(inbox, message(1))

    truth = list(cassandra.session.execute(
        "SELECT messageId, mailboxId, uid FROM imapUidTable WHERE mailboxId = %s ALLOW FILTERING",
        (mailbox_id.value,)))
    assert len(truth) == 1 and truth[0]["uid"] == 1
    assert cassandra.execute("SELECT uid FROM messageIdTable WHERE mailboxId = ?", (mailbox_id.value,)) == []
    # The index rows travel in the projection row's batch: none of them without it.
    assert cassandra.execute("SELECT uid FROM firstUnseen WHERE mailboxId = ?", (mailbox_id.value,)) == []
    assert cassandra.execute("SELECT recent_mesage_uid FROM mailboxRecents WHERE mailboxId = ?",
                             (mailbox_id.value,)) == []


def test_mailbox_counters_wrong_after_a_failed_counter_write(mailbox_ctx, cassandra, faults, user):
    inbox = MailboxPath.inbox(user)
    mailbox_id = mailbox_ctx.manager.create_mailbox(inbox)
    mailbox_ctx.manager.append(inbox, message(1))
    faults.fail("mailboxCounters", kind="UPDATE")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.append(inbox, message(2))

    counters = cassandra.one("SELECT count, unseen FROM mailboxCounters WHERE mailboxId = ?", (mailbox_id.value,))
    listed = cassandra.execute("SELECT uid FROM messageIdTable WHERE mailboxId = ?", (mailbox_id.value,))
    assert (counters["count"], counters["unseen"]) == (1, 1)
    assert len(listed) == 2


def test_current_quota_wrong_after_the_listener_failed(mailbox_ctx, cassandra, faults, user):
    inbox = MailboxPath.inbox(user)
    mailbox_ctx.manager.create_mailbox(inbox)
    mailbox_ctx.manager.append(inbox, message(1))
    faults.fail("quotaCurrentValue", kind="UPDATE", times=10)  # every retry of the listener fails
    mailbox_ctx.manager.append(inbox, message(2))  # the mail is stored: quota is a projection

    rows = cassandra.execute("SELECT quotaType, currentValue FROM quotaCurrentValue WHERE identifier = ? "
                             "AND quotaComponent = 'MAILBOX'", (QuotaRoot.for_user(user).as_string(),))
    assert {r["quotatype"]: r["currentvalue"] for r in rows} == {"count": 1, "size": len(message(1))}
    assert len(mailbox_ctx.manager.get_messages(inbox)) == 2
    assert any("ListeningCurrentQuotaUpdater" in group for group in mailbox_ctx.bus.dead_letters.groups())


def test_fast_view_projection_missing_after_the_listener_failed(mailbox_ctx, cassandra, faults, user):
    inbox = MailboxPath.inbox(user)
    mailbox_ctx.manager.create_mailbox(inbox)
    faults.fail("message_fast_view_projection", kind="INSERT", times=10)
    result = mailbox_ctx.manager.append(inbox, message(1))

    assert cassandra.execute("SELECT preview FROM message_fast_view_projection WHERE messageId = ?",
                             (result.id.message_id.value,)) == []
    assert cassandra.one("SELECT messageId FROM messageV3 WHERE messageId = ?", (result.id.message_id.value,))
