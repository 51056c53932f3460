"""The blob store contract on the in-memory adapter."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from tests.contract.blob_store_contract import BlobStoreContract


class TestMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def blob_store(self) -> MemoryBlobStore:
        return MemoryBlobStore()

    @pytest.fixture
    def passthrough_blob_store(self) -> MemoryBlobStore:
        return MemoryBlobStore(deduplication=False)
