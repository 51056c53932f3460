"""The mailbox contract on Cassandra 5 (James's tables) and the S3 server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from tests.contract.mailbox_contract import MESSAGE, MailboxContract

pytestmark = pytest.mark.integration


class TestCassandraMailbox(MailboxContract):
    @pytest.fixture
    def ctx(self, mailbox_ctx):
        return mailbox_ctx


def test_internal_date_round_trips_through_cql_at_james_precision(mailbox_ctx, cassandra):
    """What our node holds and publishes is what CQL (a James node) reads, and a James write reads back equal."""
    user = Username.of(f"u{uuid.uuid4().hex[:10]}@example.com")
    inbox = MailboxPath.inbox(user)
    mailbox_ctx.manager.create_mailbox(inbox)
    ours = mailbox_ctx.manager.append(inbox, MESSAGE, internal_date=datetime(2024, 1, 2, 3, 4, 5, 678901,
                                                                             tzinfo=UTC)).metadata
    mailbox_id, message_id = ours.mailbox_id.value, ours.message_id.value
    as_millis = 1704164645678   # Java's Date.getTime() of 2024-01-02T03:04:05.678Z
    for cql in ("SELECT CAST(internalDate AS bigint) AS ms FROM messageV3 WHERE messageId = ?",
                "SELECT CAST(internalDate AS bigint) AS ms FROM imapUidTable WHERE messageId = ?"):
        assert cassandra.one(cql, (message_id,))["ms"] == as_millis
    assert ours.internal_date == datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)

    james = as_millis + 1   # a James node rewrites the row with a Date of its own
    cassandra.execute("UPDATE messageIdTable SET internalDate = ? WHERE mailboxId = ? AND uid = ?",
                      (datetime.fromtimestamp(james / 1000, UTC), mailbox_id, ours.uid))
    [read] = mailbox_ctx.manager.get_messages(inbox)
    assert read.internal_date.replace(tzinfo=UTC) == datetime(2024, 1, 2, 3, 4, 5, 679000, tzinfo=UTC)
    assert cassandra.one("SELECT CAST(internalDate AS bigint) AS ms FROM messageIdTable WHERE mailboxId = ? "
                         "AND uid = ?", (mailbox_id, ours.uid))["ms"] == james
