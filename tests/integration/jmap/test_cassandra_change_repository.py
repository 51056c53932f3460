"""The change-log contract on James's ``mailbox_change`` and ``email_change`` tables (session keyspace)."""

from __future__ import annotations

import pytest

from mailserver.jmap.changes.cassandra import CassandraChangeRepository
from mailserver.jmap.changes.model import Change
from mailserver.jmap.changes.repository import MAILBOX_CHANGE, ChangeRepository
from tests.support.change_repository_contract import ChangeRepositoryContract, ids


class TestCassandraChangeRepository(ChangeRepositoryContract):
    @pytest.fixture(autouse=True)
    def _session(self, cassandra):
        self.session = cassandra

    def repository(self, table: str) -> ChangeRepository:
        return CassandraChangeRepository(self.session, table)

    def test_rows_are_written_as_james_writes_them(self, account):
        change = Change(account, updated=tuple(ids(1)), is_count_change=True)
        self.repository(MAILBOX_CHANGE).save(change)
        row = self.session.one("SELECT state, date, is_count_change, is_delegated, updated, TTL(is_delegated) AS ttl "
                               "FROM mailbox_change WHERE account_id = ?", (account,))
        assert row is not None and row["state"] == change.state and row["is_count_change"] is True
        assert row["date"].timezone == "Z" and set(row["updated"]) == set(change.updated)
        assert 0 < row["ttl"] <= 60 * 24 * 3600
