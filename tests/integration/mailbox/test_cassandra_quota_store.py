"""The quota store contract on Cassandra (``quotaLimit`` rows as James's CassandraPerUserMaxQuotaManagerV2)."""

from __future__ import annotations

import pytest

from mailserver.mailbox.cassandra_quota import CassandraQuotaStore
from mailserver.model.address import Username
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot
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
