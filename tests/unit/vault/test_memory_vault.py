"""The vault contract on memory metadata and a memory blob store."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.vault.memory import memory_vault
from tests.contract.vault_contract import VaultContract


class TestMemoryVault(VaultContract):
    @pytest.fixture
    def vault_at(self):
        # One metadata store and blob store, seen at different times (as one keyspace and one S3).
        blobs = MemoryBlobStore()
        shared = memory_vault(blobs)
        return lambda clock: type(shared)(shared.metadata, blobs, clock=clock)
