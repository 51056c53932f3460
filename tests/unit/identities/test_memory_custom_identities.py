"""The memory ``CustomIdentityStore`` meets the adapters' contract."""

from __future__ import annotations

import pytest

from mailserver.identities.memory import MemoryCustomIdentityStore
from tests.contract.custom_identity_store_contract import CustomIdentityStoreContract


class TestMemoryCustomIdentityStore(CustomIdentityStoreContract):
    @pytest.fixture
    def store(self) -> MemoryCustomIdentityStore:
        return MemoryCustomIdentityStore()
