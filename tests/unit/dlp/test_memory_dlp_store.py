"""``DlpConfigurationStore`` on the memory event store meets the contract."""

from __future__ import annotations

import pytest

from mailserver.eventsourcing.memory import MemoryEventStore
from tests.contract.dlp_store_contract import DlpStoreContract


class TestMemoryDlpStore(DlpStoreContract):
    @pytest.fixture
    def events(self) -> MemoryEventStore:
        return MemoryEventStore()
