"""Mail written through the mailbox manager (Cassandra + real S3), with listener writes failing.

The current quota and the fast view are projections kept by event-bus listeners. Production
breaks them when a listener's write keeps failing until the bus gives up (dead letter); here
the fault seam fails that write on every attempt of the in-process bus, through the same code.
Checks read the tables with plain CQL and recompute the expected values with the server's code.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mailserver.blob.api import BlobStore
from mailserver.cassandra.session import CassandraSession
from mailserver.domains.cassandra import CassandraDomainList
from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.content import PREVIEW_SCAN_BYTES, preview
from mailserver.mailbox.listeners import read_prefix
from mailserver.mailbox.wiring import MailboxContext, cassandra_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.model.quota import QuotaRoot
from mailserver.users.cassandra import CassandraUsersRepository
from tests.support.mime_samples import sample


def mailbox_context(session: CassandraSession, blobs: BlobStore) -> MailboxContext:
    return cassandra_context(session, blobs, InProcessEventBus())


def fail_listener_write(ctx: MailboxContext, session: CassandraSession, table: str, kind: str,
                        action: Callable[[], Any]) -> Any:
    """Run ``action`` with ``kind`` on ``table`` failing on every delivery attempt of the bus."""
    attempts = ctx.bus.retries + 1
    dead_before = len(ctx.bus.dead_letters)
    rule = session.faults.fail(table, kind=kind, times=attempts)
    try:
        result = action()
    finally:
        session.faults.clear()
    assert rule.hits == attempts, f"{kind} on {table} failed {rule.hits} times, expected {attempts}"
    assert len(ctx.bus.dead_letters) == dead_before + 1, "the listener should have given up once"
    return result


def register_user(session: CassandraSession, user: Username) -> None:
    """Add ``user`` to the users repository (and its domain to the domain list when missing)."""
    domains = CassandraDomainList(session)
    if user.domain is not None and not domains.contains(user.domain):
        domains.add(user.domain)
    CassandraUsersRepository(session, domains).add_user(user, "secret-password")


@dataclass
class SeededUsers:
    users: list[Username] = field(default_factory=list)
    inbox: dict[Username, MailboxPath] = field(default_factory=dict)
    archive: dict[Username, MailboxPath] = field(default_factory=dict)


def seed_users(ctx: MailboxContext, session: CassandraSession, *, users: int, inbox_messages: int,
               archive_messages: int, registered: bool = True) -> SeededUsers:
    """Users with an INBOX and an Archive of real MIME messages, appended through the manager."""
    seeded = SeededUsers()
    tag = uuid.uuid4().hex[:6]
    for u in range(users):
        user = Username.of(f"proj{u}-{tag}@example.com")
        if registered:
            register_user(session, user)
        inbox, archive = MailboxPath.inbox(user), MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(inbox)
        ctx.manager.create_mailbox(archive)
        for n in range(inbox_messages):
            ctx.manager.append(inbox, sample(n))
        for n in range(archive_messages):
            ctx.manager.append(archive, sample(n + 100))
        seeded.users.append(user)
        seeded.inbox[user], seeded.archive[user] = inbox, archive
    return seeded


def stored_quota(session: CassandraSession, user: Username) -> dict[str, int]:
    rows = session.execute("SELECT quotaType, currentValue FROM quotaCurrentValue WHERE identifier = ? "
                           "AND quotaComponent = 'MAILBOX'", (QuotaRoot.for_user(user).as_string(),))
    values = {r["quotatype"]: r["currentvalue"] or 0 for r in rows}
    return {"count": values.get("count", 0), "size": values.get("size", 0)}


def usage_by_cql(session: CassandraSession, user: Username) -> dict[str, int]:
    """What the quota must be: the messages of the user's personal mailboxes, by CQL."""
    count = size = 0
    for mailbox in session.execute("SELECT mailboxId FROM mailboxPathV3 WHERE namespace = '#private' AND user = ?",
                                   (str(user),)):
        rows = session.execute("SELECT fullContentOctets FROM messageIdTable WHERE mailboxId = ?",
                               (mailbox["mailboxid"],))
        count += len(rows)
        size += sum(r["fullcontentoctets"] for r in rows)
    return {"count": count, "size": size}


def expected_fast_view(session: CassandraSession, blobs: BlobStore, message_id: uuid.UUID) -> tuple[str, bool]:
    """preview and hasAttachment as the server's listener computes them from the stored content."""
    content = session.one("SELECT headerContent, bodyContent FROM messageV3 WHERE messageId = ?", (message_id,))
    return preview(read_prefix(blobs, content["headercontent"], content["bodycontent"], PREVIEW_SCAN_BYTES))


def fast_view_rows(session: CassandraSession) -> dict[uuid.UUID, tuple[str, bool]]:
    return {r["messageid"]: (r["preview"], r["hasattachment"])
            for r in session.execute("SELECT messageId, preview, hasAttachment FROM message_fast_view_projection")}


def message_ids(session: CassandraSession) -> set[uuid.UUID]:
    return {r["messageid"] for r in session.execute("SELECT messageId FROM imapUidTable")}


def user_message_ids(session: CassandraSession, user: Username) -> set[uuid.UUID]:
    """Message ids of the user's personal mailboxes."""
    ids: set[uuid.UUID] = set()
    for mailbox in session.execute("SELECT mailboxId FROM mailboxPathV3 WHERE namespace = '#private' AND user = ?",
                                   (str(user),)):
        ids |= {r["messageid"] for r in session.execute("SELECT messageId FROM messageIdTable WHERE mailboxId = ?",
                                                        (mailbox["mailboxid"],))}
    return ids
