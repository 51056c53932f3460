"""The operator guide's symptom, seen by mail clients: a message visible in JMAP but not in IMAP.

A delivery whose ``messageIdTable`` write is lost (the fault seam fails it, as a node timeout
would) leaves the message in ``imapUidTable`` (the truth, what JMAP reads by message id) but not
in ``messageIdTable`` (the projection IMAP, and JMAP's Email/query, list a mailbox from). An IMAP
client and a JMAP client, on servers started over the same keyspace and bucket, do not list it;
after the ``solve_message_inconsistencies`` DAG (``dag.test()``, health gate, Spark, report) both
list it, IMAP fetches the very octets that were delivered and JMAP agrees on its mailbox and keywords.
"""

from __future__ import annotations

import imaplib
import re
import uuid

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.imap import ImapConfig, ImapServer, ImapServerThread
from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
from mailserver.model.address import Username
from mailserver.model.ids import MessageId
from mailserver.model.mailbox import MailboxPath
from mailserver.users.cassandra import CassandraUsersRepository
from tests.e2e.maintenance.conftest import run_dag
from tests.support.jmap_world import JmapReader
from tests.support.mail_projections import mailbox_context, register_user
from tests.support.maintenance import fail_once

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "solve_message_inconsistencies"
PASSWORD = "secret-password"   # register_user's
VISIBLE = (b"From: carol@example.com\r\nTo: {user}\r\nSubject: lunch\r\nMessage-ID: <lunch@example.com>\r\n"
           b"\r\nNoon?\r\n")
HIDDEN = (b"From: Bob <bob@example.com>\r\nTo: {user}\r\nSubject: =?utf-8?q?r=C3=A9port?=\r\n"
          b"Date: Mon, 23 Nov 2026 10:00:00 +0100\r\nMessage-ID: <lost-projection@example.com>\r\nMIME-Version: 1.0\r\n"
          b"Content-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
          b"Numbers attached.\r\n--b1\r\nContent-Type: application/octet-stream; name=q4.bin\r\n"
          b"Content-Transfer-Encoding: base64\r\n\r\nAAECAwQFBgcICQ==\r\n--b1--\r\n")


def ok(response: tuple) -> list:
    status, data = response
    assert status == "OK", response
    return data


def uids(client: imaplib.IMAP4) -> list[int]:
    return [int(u) for u in ok(client.uid("SEARCH", "ALL"))[0].split()]


def bodies(client: imaplib.IMAP4, uid_set: str) -> dict[int, bytes]:
    """``UID FETCH <set> (UID BODY.PEEK[])``: {uid: octets} (PEEK: nothing is written)."""
    data = ok(client.uid("FETCH", uid_set, "(UID BODY.PEEK[])"))
    return {int(re.search(rb"UID (\d+)", part[0]).group(1)): part[1] for part in data if isinstance(part, tuple)}


def test_a_message_imap_cannot_list_is_listed_and_fetched_after_the_dag(maintenance_airflow, maintenance_keyspace,
                                                                          s3_blobs):
    session = maintenance_keyspace
    ctx = mailbox_context(session, s3_blobs)
    user = Username.of(f"imap-cure-{uuid.uuid4().hex[:6]}@example.com")
    register_user(session, user)
    inbox = MailboxPath.inbox(user)
    ctx.manager.create_mailbox(inbox)
    visible, hidden = VISIBLE.replace(b"{user}", str(user).encode()), HIDDEN.replace(b"{user}", str(user).encode())
    first = ctx.manager.append(inbox, visible, is_delivery=True).metadata
    lost = MessageId.generate()   # chosen, so the test knows it although the append fails
    fail_once(session, "messageIdTable", "UPDATE",
              lambda: ctx.manager.append(inbox, hidden, is_delivery=True, message_id=lost))
    [truth] = ctx.manager.find_message(lost)   # imapUidTable: what JMAP reads by message id
    assert truth.mailbox_id == first.mailbox_id and truth.uid > first.uid

    users = CassandraUsersRepository(session, CassandraDomainList(session))
    jmap = JmapReader(ctx.manager, users, user)
    inbox_id, email_id, first_id = str(first.mailbox_id), str(lost), str(first.message_id)
    assert jmap.mailboxes()["INBOX"]["id"] == inbox_id
    assert jmap.listed(inbox_id) == [first_id], "JMAP lists a mailbox from messageIdTable too"
    assert jmap.emails(email_id)[email_id]["mailboxIds"] == {inbox_id: True}, "read by id, from the truth"

    server = ImapServer(ImapConfig(port=0, auth_require_tls=False), ctx.manager, users,
                        subscriptions=CassandraSubscriptionStore(session))
    with ImapServerThread(server) as thread:
        client = imaplib.IMAP4("127.0.0.1", thread.port, timeout=60)
        ok(client.login(str(user), PASSWORD))
        assert ok(client.select("INBOX")) == [b"1"], "IMAP lists messageIdTable: the lost message is not there"
        assert uids(client) == [first.uid]
        assert bodies(client, f"{truth.uid}") == {}, "not even by its uid"

        run, states, summary = run_dag(DAG_ID)
        assert run.state == "success", states
        assert summary["outcome"] == "COMPLETED"
        assert summary["addedMessageIdEntries"] == 1, summary

        # The repair writes messageIdTable only (no event, no counter): a selected session is told
        # nothing until it selects again; a new session sees it at once.
        assert ok(client.select("INBOX")) == [b"2"]
        assert uids(client) == [first.uid, truth.uid]
        assert bodies(client, "1:*") == {first.uid: visible, truth.uid: hidden}, "byte-identical to the delivery"
        envelope = ok(client.uid("FETCH", f"{truth.uid}", "(FLAGS ENVELOPE)"))[0]
        assert b"<lost-projection@example.com>" in envelope and b"\\Seen" not in envelope
        client.logout()

        other = imaplib.IMAP4("127.0.0.1", thread.port, timeout=60)
        ok(other.login(str(user), PASSWORD))
        assert ok(other.select("INBOX", readonly=True)) == [b"2"]
        assert uids(other) == [first.uid, truth.uid]
        assert bodies(other, f"{truth.uid}") == {truth.uid: hidden}
        other.logout()

    # JMAP agrees with IMAP: the same mailbox lists both, the repaired one unread, in INBOX only.
    mailboxes = jmap.mailboxes()
    assert mailboxes["INBOX"]["id"] == inbox_id and mailboxes["INBOX"]["role"] == "inbox"
    assert sorted(jmap.listed(inbox_id)) == sorted([first_id, email_id])
    repaired = jmap.emails(email_id, properties=("mailboxIds", "keywords", "messageId"))[email_id]
    assert repaired["mailboxIds"] == {inbox_id: True} and repaired["keywords"] == {}
    assert repaired["messageId"] == ["lost-projection@example.com"]
