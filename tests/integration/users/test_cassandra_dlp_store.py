"""``DlpConfigurationStore`` on James's Cassandra ``eventStore`` table meets the contract."""

from __future__ import annotations

import pytest

from mailserver.eventsourcing.cassandra import CassandraEventStore
from tests.contract.dlp_store_contract import DlpStoreContract

pytestmark = pytest.mark.integration


class TestCassandraDlpStore(DlpStoreContract):
    @pytest.fixture
    def events(self, cassandra) -> CassandraEventStore:
        return CassandraEventStore(cassandra)
