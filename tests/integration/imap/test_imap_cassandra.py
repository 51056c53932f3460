"""IMAP on the mailbox layer of Cassandra 5 (James's tables) and the S3 server: the same client
sessions as the unit tests, then James's counters and current quota read back with CQL."""

from __future__ import annotations

import uuid

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.events.in_process import InProcessEventBus
from mailserver.imap import ImapConfig, ImapServer, ImapServerThread
from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot, QuotaUsage
from mailserver.users.cassandra import CassandraUsersRepository
from tests.unit.imap.imap_sessions import NOTE, REPORT, imapclient_session, imaplib_session, quota_of
from tests.unit.imap.raw_client import RawImap

pytestmark = pytest.mark.integration
PASSWORD = "s3cret-Passw0rd"


@pytest.fixture
def imap(cassandra, s3_blobs):
    ctx = cassandra_context(cassandra, s3_blobs, InProcessEventBus())
    domains = CassandraDomainList(cassandra)
    domain = f"imap-{uuid.uuid4().hex[:8]}.test"
    domains.add(domain)
    users = CassandraUsersRepository(cassandra, domains)
    server = ImapServer(ImapConfig(port=0, auth_require_tls=False, idle_poll_interval=0.2), ctx.manager, users,
                        subscriptions=CassandraSubscriptionStore(cassandra))
    thread = ImapServerThread(server).start()
    try:
        yield ctx, users, domain, thread.port
    finally:
        thread.stop()


def cql_counters(cassandra, ctx, path: MailboxPath) -> tuple[int, int]:
    mailbox_id = ctx.manager.get_mailbox(path).id
    row = cassandra.one("SELECT count, unseen FROM mailboxCounters WHERE mailboxId = ?", (mailbox_id.value,))
    return (row["count"] or 0, row["unseen"] or 0) if row else (0, 0)


def cql_quota(cassandra, user: str) -> QuotaUsage:
    rows = cassandra.execute("SELECT quotaType, currentValue FROM quotaCurrentValue WHERE identifier = ? "
                             "AND quotaComponent = ?", (QuotaRoot.for_user(Username.of(user)).as_string(), "MAILBOX"))
    values = {r["quotatype"]: r["currentvalue"] or 0 for r in rows}
    return QuotaUsage(values.get("count", 0), values.get("size", 0))


def test_imaplib_session_on_cassandra_and_s3(imap, cassandra):
    import imaplib

    ctx, users, domain, port = imap
    user = f"alice@{domain}"
    users.add_user(user, PASSWORD)
    client = imaplib.IMAP4("127.0.0.1", port, timeout=30)
    client.login(user, PASSWORD)
    imaplib_session(client, ctx.manager, user, lambda: cql_quota(cassandra, user))
    inbox = MailboxPath.inbox(Username.of(user))
    assert cql_counters(cassandra, ctx, inbox) == (0, 0)
    rows = cassandra.execute("SELECT mailbox FROM subscription WHERE user = ?", (user,))
    assert sorted(r["mailbox"] for r in rows) == ["Archive", "INBOX"], \
        "INBOX is subscribed when provisioned; the subscription outlives the deleted mailbox (RFC 3501)"


def test_imapclient_session_on_cassandra_and_s3(imap, cassandra):
    ctx, users, domain, port = imap
    user = f"bob@{domain}"
    users.add_user(user, PASSWORD)
    imapclient_session("127.0.0.1", port, user, PASSWORD, ctx.manager, lambda: cql_quota(cassandra, user))
    owner = Username.of(user)
    assert cql_counters(cassandra, ctx, MailboxPath.of(owner, "Old.Projects")) == (1, 0)
    assert cql_counters(cassandra, ctx, MailboxPath.of(owner, "Old")) == (0, 0)
    assert cql_quota(cassandra, user) == QuotaUsage(1, len(REPORT))
    assert quota_of(ctx.quota, user)() == QuotaUsage(1, len(REPORT))


def test_idle_sees_a_delivery_and_flags_follow_in_cql(imap, cassandra):
    import imaplib

    ctx, users, domain, port = imap
    user = f"carol@{domain}"
    users.add_user(user, PASSWORD)
    client = imaplib.IMAP4("127.0.0.1", port, timeout=30)
    client.login(user, PASSWORD)
    client.select("INBOX")
    client.send(b"i IDLE\r\n")
    assert client.readline() == b"+ idling\r\n"
    inbox = MailboxPath.inbox(Username.of(user))
    ctx.manager.append(inbox, NOTE, is_delivery=True)   # LocalDelivery's path, not through IMAP
    assert client.readline() == b"* 1 EXISTS\r\n"
    assert client.readline() == b"* 1 RECENT\r\n"
    client.send(b"DONE\r\n")
    assert client.readline() == b"i OK IDLE terminated\r\n"
    assert cql_counters(cassandra, ctx, inbox) == (1, 1)
    client.fetch("1", "(BODY[])")
    assert cql_counters(cassandra, ctx, inbox) == (1, 0), "FETCH BODY[] sets \\Seen: the unseen counter follows"
    client.logout()


def test_names_with_control_characters_never_reach_cassandra(imap, cassandra):
    _, users, domain, port = imap
    user = f"carol@{domain}"
    users.add_user(user, PASSWORD)
    raw = RawImap(port)
    assert raw.command(b"l", b"LOGIN " + user.encode() + b" " + PASSWORD.encode())[-1].startswith(b"l OK")
    raw.send(b"a CREATE {5}\r\n")
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(b"a\x00b.c\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a NO [CANNOT] mailbox name 'a\\x00b.c' contains a control character")
    assert raw.command(b"c", b"CREATE Work")[-1] == b"c OK CREATE completed\r\n"
    assert raw.command(b"r", b'RENAME Work "Play\x1b"')[-1].startswith(b"r NO [CANNOT]")
    rows = cassandra.execute("SELECT mailboxName FROM mailboxPathV3 WHERE namespace = ? AND user = ?",
                             ("#private", user))
    assert sorted(r["mailboxname"] for r in rows) == ["INBOX", "Work"]
    raw.close()
