"""``append_once`` after a crash cut an append short between imapUidTable and messageIdTable.

The crash is produced through the fault seam (the messageIdTable write fails, as a process killed
right after the truth row would leave it); the run that comes again must finish that copy, not
skip it (it would stay invisible to IMAP) nor store a second one.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.cassandra.faults import InjectedWriteFailure
from mailserver.events.in_process import RecordingListener
from mailserver.mailbox.store import MailboxCounters
from mailserver.model.address import Username
from mailserver.model.events import Added
from mailserver.model.ids import MessageId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot, QuotaUsage
from tests.contract.mailbox_contract import message

pytestmark = pytest.mark.integration


def test_a_copy_left_half_written_is_finished_once(mailbox_ctx, faults):
    user = Username.of(f"h{uuid.uuid4().hex[:10]}@example.com")
    inbox = MailboxPath.inbox(user)
    mailbox_ctx.manager.create_mailbox(inbox)
    chosen = MessageId.generate()
    faults.fail("messageIdTable", kind="UPDATE")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)
    assert mailbox_ctx.manager.get_messages(inbox) == []     # the crash's state: truth row only
    assert len(mailbox_ctx.manager.find_message(chosen)) == 1
    assert not mailbox_ctx.manager.stored_once(chosen)          # half written: still to be stored

    again = mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)
    third = mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)

    assert again.appended is None and [m.uid for m in again.finished] == [1]
    assert third.appended is None and third.finished == ()
    assert [m.message_id for m in mailbox_ctx.manager.get_messages(inbox)] == [chosen]
    assert mailbox_ctx.manager.stored_once(chosen)
    assert mailbox_ctx.manager.counters(inbox) == MailboxCounters(1, 1)
    assert mailbox_ctx.manager.read_message(chosen) == message(1)
    assert mailbox_ctx.quota.current(QuotaRoot.for_user(user)) == QuotaUsage(1, len(message(1)))
    recorder = next(x for x in mailbox_ctx.bus.listeners if isinstance(x, RecordingListener))
    assert len([e for e in recorder.of_type(Added) if e.user == user]) == 1   # announced once, when finished


def test_a_copy_left_half_written_in_a_mailbox_without_its_row_is_finished(mailbox_ctx, cassandra, faults):
    """The crash run that lost a mail: the INBOX's creation was cut short after its path entry, mail
    kept arriving through the path, and a delivery redone after a crash found its half-written copy
    in a mailbox it could not find by id; taking that for a deleted mailbox skipped the copy."""
    user = Username.of(f"h{uuid.uuid4().hex[:10]}@example.com")
    inbox = MailboxPath.inbox(user)
    mailbox_id = mailbox_ctx.manager.create_mailbox(inbox)
    chosen = MessageId.generate()
    faults.fail("messageIdTable", kind="UPDATE")
    with pytest.raises(InjectedWriteFailure):
        mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)
    cassandra.execute("DELETE FROM mailbox WHERE id = ?", (mailbox_id.value,))   # the row never written

    again = mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)

    assert again.appended is None and [m.uid for m in again.finished] == [1]
    assert [m.message_id for m in mailbox_ctx.manager.get_messages(inbox)] == [chosen]


def test_the_look_for_an_earlier_copy_settles_a_timed_out_conditional_write_first(mailbox_ctx, cassandra, monkeypatch):
    """The imapUidTable row is written by an LWT; one that timed out may sit accepted on one replica,
    unseen by QUORUM reads: a redelivery that looked at QUORUM stored the mail twice (three nodes, one
    killed). The look of ``append_once`` is a SERIAL read, which completes such a write first."""
    user = Username.of(f"h{uuid.uuid4().hex[:10]}@example.com")
    inbox = MailboxPath.inbox(user)
    mailbox_ctx.manager.create_mailbox(inbox)
    reads: list[bool] = []
    execute = type(cassandra).execute

    def spy(self, cql, params=None, *, strong=False, **kwargs):
        if cql.startswith("SELECT * FROM imapUidTable WHERE messageId"):
            reads.append(strong)
        return execute(self, cql, params, strong=strong, **kwargs)

    monkeypatch.setattr(type(cassandra), "execute", spy)
    chosen = MessageId.generate()
    mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)
    again = mailbox_ctx.manager.append_once(inbox, message(1), chosen, is_delivery=True)

    assert reads == [True, True]
    assert again.appended is None
    assert [m.uid for m in mailbox_ctx.manager.get_messages(inbox)] == [1]
