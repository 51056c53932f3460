"""The blob store contract on the in-memory adapter, in both deduplication modes."""

from __future__ import annotations

import pytest

from mailserver.blob.memory import MemoryBlobStore
from tests.contract.blob_store_contract import BlobStoreContract


class TestMemoryBlobStore(BlobStoreContract):
    @pytest.fixture
    def make_blob_store(self):
        shared = MemoryBlobStore()   # every store of a test sees the same buckets, as on S3

        def make(ids) -> MemoryBlobStore:
            return shared.sharing_buckets(ids)
        return make


def test_deduplication_is_off_by_default_as_james_sample_configuration():
    store = MemoryBlobStore()
    assert not store.deduplicating
    blob_id = store.save(store.default_bucket, b"x")
    assert store.delete(store.default_bucket, blob_id) is True and not store.exists(store.default_bucket, blob_id)
