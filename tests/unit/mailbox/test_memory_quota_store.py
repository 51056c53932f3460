"""The quota store contract on the memory adapter."""

from __future__ import annotations

import pytest

from mailserver.mailbox.memory import MemoryQuotaStore
from tests.contract.quota_store_contract import QuotaStoreContract


class TestMemoryQuotaStore(QuotaStoreContract):
    @pytest.fixture
    def store(self):
        return MemoryQuotaStore()
