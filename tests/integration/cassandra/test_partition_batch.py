"""CassandraSession.execute_partition_batch: rows of one partition key in several tables, all or none."""

from __future__ import annotations

import uuid

import pytest

from mailserver.cassandra.faults import InjectedWriteFailure

RECENT = "INSERT INTO mailboxRecents (mailboxId, recent_mesage_uid) VALUES (?, ?)"
UNSEEN = "INSERT INTO firstUnseen (mailboxId, uid) VALUES (?, ?)"


def rows(cassandra, mailbox: uuid.UUID) -> tuple[list[int], list[int]]:
    recent = [r["recent_mesage_uid"] for r in
              cassandra.execute("SELECT recent_mesage_uid FROM mailboxRecents WHERE mailboxId = ?", (mailbox,))]
    unseen = [r["uid"] for r in cassandra.execute("SELECT uid FROM firstUnseen WHERE mailboxId = ?", (mailbox,))]
    return recent, unseen


def test_the_rows_of_every_table_are_written(cassandra):
    mailbox = uuid.uuid1()
    cassandra.execute_partition_batch([(RECENT, (mailbox, 7)), (UNSEEN, (mailbox, 7)), (UNSEEN, (mailbox, 8))])
    assert rows(cassandra, mailbox) == ([7], [7, 8])


def test_a_failing_statement_writes_nothing_of_the_batch(cassandra, faults):
    mailbox = uuid.uuid1()
    faults.fail("firstUnseen", kind="INSERT")
    with pytest.raises(InjectedWriteFailure):
        cassandra.execute_partition_batch([(RECENT, (mailbox, 1)), (UNSEEN, (mailbox, 1))])
    assert rows(cassandra, mailbox) == ([], [])


def test_a_single_statement_is_sent_alone(cassandra, faults):
    mailbox = uuid.uuid1()
    cassandra.execute_partition_batch([(UNSEEN, (mailbox, 3))])
    assert rows(cassandra, mailbox) == ([], [3])
