"""The quota store contract on Cassandra (``quotaLimit`` rows as James's CassandraPerUserMaxQuotaManagerV2)."""

from __future__ import annotations

import datetime as dt
import uuid

import pytest

from mailserver.cassandra.faults import InjectedWriteFailure
from mailserver.mailbox.cassandra_quota import APPLIED_SHARDS, EPOCH, CassandraQuotaStore
from mailserver.mailbox.store import AppliedEvent
from mailserver.model.address import Username
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot, QuotaUsage
from tests.contract.quota_store_contract import QuotaStoreContract

pytestmark = pytest.mark.integration


class TestCassandraQuotaStore(QuotaStoreContract):
    @pytest.fixture
    def store(self, cassandra):
        return CassandraQuotaStore(cassandra)


def test_rows_are_james_rows(cassandra):
    """One row per scope, identifier, component and type; -1 for unlimited; no row once removed."""
    store = CassandraQuotaStore(cassandra)
    root = QuotaRoot.for_user(Username.of("carol@rows-quota.test"))
    store.set_limits(LimitKey.user(root), QuotaLimits(-1, 2048))
    rows = cassandra.execute("SELECT quotaComponent, quotaType, quotaLimit FROM quotaLimit "
                             "WHERE quotaScope = 'user' AND identifier = ?", (root.value,))
    assert sorted((r["quotacomponent"], r["quotatype"], r["quotalimit"]) for r in rows) == [
        ("MAILBOX", "count", -1), ("MAILBOX", "size", 2048)]
    store.set_limits(LimitKey.user(root), QuotaLimits(None, 2048))
    rows = cassandra.execute("SELECT quotaType FROM quotaLimit WHERE quotaScope = 'user' AND identifier = ?",
                             (root.value,))
    assert [r["quotatype"] for r in rows] == ["size"]


def test_a_value_below_minus_one_written_by_someone_else_reads_as_zero(cassandra):
    """James's QuotaCodec reads an invalid stored limit as 0 (no right), not as unlimited."""
    root = QuotaRoot.for_user(Username.of("dave@rows-quota.test"))
    cassandra.execute("INSERT INTO quotaLimit (quotaScope, identifier, quotaComponent, quotaType, quotaLimit) "
                      "VALUES ('user', ?, 'MAILBOX', 'count', -5)", (root.value,))
    assert CassandraQuotaStore(cassandra).defined_limits(LimitKey.user(root)) == QuotaLimits(0, None)


def fresh_root() -> QuotaRoot:
    return QuotaRoot.for_user(Username.of(f"u{uuid.uuid4().hex[:10]}@applied-quota.test"))


def test_counts_and_the_applied_record_are_one_write(cassandra):
    """When the record cannot be written, neither is the count: no count without its record."""
    store, root = CassandraQuotaStore(cassandra), fresh_root()
    event = AppliedEvent(f"group-{uuid.uuid4().hex[:6]}", uuid.uuid4())
    cassandra.faults.fail("event_applied", kind="UPDATE")
    try:
        with pytest.raises(InjectedWriteFailure):
            store.increase(root, QuotaUsage(1, 100), once=event)
    finally:
        cassandra.faults.clear()
    assert store.current(root) == QuotaUsage(0, 0)
    assert store.increase(root, QuotaUsage(1, 100), once=event) is True   # delivered again: counted now
    assert store.current(root) == QuotaUsage(1, 100)


def week_of(day: dt.date) -> int:
    return (day - EPOCH).days // 7


def test_an_event_is_remembered_the_next_week_and_its_partition_dropped_later(cassandra):
    group, event = f"group-{uuid.uuid4().hex[:6]}", uuid.uuid4()
    root, monday = fresh_root(), dt.date(2026, 11, 2)
    day = [monday]
    store = CassandraQuotaStore(cassandra, today=lambda: day[0])
    assert store.increase(root, QuotaUsage(1, 10), once=AppliedEvent(group, event))

    day[0] = monday + dt.timedelta(days=13)          # the next week: still recognised
    assert store.increase(root, QuotaUsage(1, 10), once=AppliedEvent(group, event)) is False

    shard = event.int % APPLIED_SHARDS
    def partition_rows() -> int:
        return len(cassandra.execute('SELECT eventId FROM event_applied WHERE "group" = ? AND week = ? AND shard = ?',
                                     (group, week_of(monday), shard)))
    assert partition_rows() == 1
    day[0] = monday + dt.timedelta(days=14)          # two weeks on: forgotten, and the partition deleted
    assert store.increase(root, QuotaUsage(1, 10), once=AppliedEvent(group, uuid.uuid4())) is True
    assert partition_rows() == 0
    assert store.current(root) == QuotaUsage(2, 20)


def test_a_failed_cleanup_of_old_weeks_does_not_fail_the_count_and_is_tried_again(cassandra):
    group, root = f"group-{uuid.uuid4().hex[:6]}", fresh_root()
    store = CassandraQuotaStore(cassandra, today=lambda: dt.date(2026, 11, 2))
    cassandra.faults.fail("event_applied", kind="DELETE", times=1)
    try:
        assert store.increase(root, QuotaUsage(1, 10), once=AppliedEvent(group, uuid.uuid4())) is True
        assert store.current(root) == QuotaUsage(1, 10)
        assert store.forgotten_weeks() == set()          # not done: the next event tries again
        assert store.increase(root, QuotaUsage(1, 10), once=AppliedEvent(group, uuid.uuid4())) is True
    finally:
        cassandra.faults.clear()
    assert store.current(root) == QuotaUsage(2, 20)
    assert store.forgotten_weeks() == {(group, week_of(dt.date(2026, 11, 2)) - 1)}
