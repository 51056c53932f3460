"""``rebuild_flag_index`` on Cassandra: the ``messageDeleted`` / ``mailboxRecents`` partition of a
mailbox rewritten from the flags of ``messageIdTable`` (what ``SolveMailboxFlagInconsistencyTask`` runs)."""

from __future__ import annotations

import uuid

import pytest

from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from tests.contract.mailbox_contract import message

pytestmark = pytest.mark.integration


def listed(cassandra, table: str, column: str, mailbox_id) -> list[int]:
    return sorted(r[column.lower()] for r in cassandra.execute(f"SELECT {column} FROM {table} WHERE mailboxId = ?",
                                                               (mailbox_id.value,)))


@pytest.mark.parametrize(("flag", "table", "column"), [(SystemFlag.DELETED, "messageDeleted", "uid"),
                                                       (SystemFlag.RECENT, "mailboxRecents", "recent_mesage_uid")])
def test_the_index_lists_exactly_the_flagged_messages_after_a_rebuild(mailbox_ctx, cassandra, flag, table, column):
    path = MailboxPath.of(Username.of(f"f{uuid.uuid4().hex[:10]}@example.com"), "INBOX")
    manager = mailbox_ctx.manager
    manager.create_mailbox(path)
    for n in range(3):
        manager.append(path, message(n))
    manager.set_flags(path, Flags.of(flag), FlagsUpdateMode.REPLACE, [1, 2])
    manager.set_flags(path, Flags.of(), FlagsUpdateMode.REPLACE, [3])
    mailbox_id = manager.mailboxes.find_by_path(path).id
    # The inconsistencies: a flagged message missing from the index, an unflagged one listed.
    cassandra.execute(f"DELETE FROM {table} WHERE mailboxId = ? AND {column} = ?", (mailbox_id.value, 2))
    cassandra.execute(f"INSERT INTO {table} (mailboxId, {column}) VALUES (?, ?)", (mailbox_id.value, 3))

    assert manager.messages.rebuild_flag_index(mailbox_id, flag) == 2
    assert listed(cassandra, table, column, mailbox_id) == [1, 2]
    if flag is SystemFlag.DELETED:
        assert sorted(manager.messages.deleted_uids(mailbox_id)) == [1, 2]
