"""The in-process blob cache: the blob store contract through it, and what it saves."""

from __future__ import annotations

import pytest

from mailserver.blob.api import BlobNotFound
from mailserver.blob.cache import CachedBlobStore
from mailserver.blob.memory import MemoryBlobStore
from tests.contract.blob_store_contract import BlobStoreContract


class CountingMemoryBlobStore(MemoryBlobStore):
    """Counts the reads that reach the backend (an S3 GET each on the real adapter)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.opened = 0

    def _open(self, bucket, blob_id):
        self.opened += 1
        return super()._open(bucket, blob_id)


class TestCachedBlobStore(BlobStoreContract):
    @pytest.fixture
    def make_blob_store(self):
        shared = MemoryBlobStore()

        def make(ids) -> CachedBlobStore:
            return CachedBlobStore(shared.sharing_buckets(ids), max_bytes=64 * 1024, max_blob_bytes=8 * 1024)
        return make


@pytest.fixture
def backend() -> CountingMemoryBlobStore:
    return CountingMemoryBlobStore()


def test_a_blob_written_through_the_cache_is_read_back_without_reaching_the_backend(backend):
    store = CachedBlobStore(backend)
    blob_id = store.save(store.default_bucket, b"Subject: hi\r\n\r\n")
    assert store.read(store.default_bucket, blob_id) == b"Subject: hi\r\n\r\n"
    with store.read_stream(store.default_bucket, blob_id) as stream:
        assert stream.read() == b"Subject: hi\r\n\r\n"
    assert backend.opened == 0 and store.hits == 2


def test_a_blob_read_whole_once_is_served_from_the_cache_afterwards(backend):
    blob_id = backend.save(backend.default_bucket, b"written by another process")
    store = CachedBlobStore(backend)
    assert store.read(store.default_bucket, blob_id) == b"written by another process"
    assert store.read(store.default_bucket, blob_id) == b"written by another process"
    assert backend.opened == 1


def test_blobs_over_the_entry_limit_always_go_to_the_backend(backend):
    store = CachedBlobStore(backend, max_bytes=1024, max_blob_bytes=100)
    blob_id = store.save(store.default_bucket, b"x" * 101)
    assert store.read(store.default_bucket, blob_id) == b"x" * 101
    assert store.read(store.default_bucket, blob_id) == b"x" * 101
    assert backend.opened == 2 and store.cached_bytes == 0


def test_the_least_recently_used_blobs_leave_first_and_the_total_stays_bounded(backend):
    store = CachedBlobStore(backend, max_bytes=300, max_blob_bytes=100)
    first, second, third = (store.save(store.default_bucket, bytes([n]) * 100) for n in range(3))
    store.read(store.default_bucket, first)        # first is now the most recently used
    store.save(store.default_bucket, b"z" * 100)   # evicts second, the least recently used
    assert store.cached_bytes == 300
    opened = backend.opened
    store.read(store.default_bucket, first)
    store.read(store.default_bucket, third)
    assert backend.opened == opened
    store.read(store.default_bucket, second)
    assert backend.opened == opened + 1


def test_a_delete_through_the_cache_is_seen_at_once(backend):
    store = CachedBlobStore(backend)
    blob_id = store.save(store.default_bucket, b"gone soon")
    assert store.delete(store.default_bucket, blob_id)
    with pytest.raises(BlobNotFound):
        store.read(store.default_bucket, blob_id)
    assert not store.exists(store.default_bucket, blob_id)


def test_deleting_a_bucket_empties_its_part_of_the_cache(backend):
    store = CachedBlobStore(backend)
    blob_id = store.save("other-bucket", b"in another bucket")
    kept = store.save(store.default_bucket, b"kept")
    store.delete_bucket("other-bucket")
    with pytest.raises(BlobNotFound):
        store.read("other-bucket", blob_id)
    assert store.read(store.default_bucket, kept) == b"kept"


def test_presence_of_a_cached_blob_is_answered_without_the_backend(backend):
    store = CachedBlobStore(backend, max_bytes=1024, max_blob_bytes=100)
    cached = store.save(store.default_bucket, b"small")
    large = store.save(store.default_bucket, b"x" * 101)
    backend.delete(backend.default_bucket, large)
    assert store.exists(store.default_bucket, cached)
    assert not store.exists(store.default_bucket, large)   # not cached: the backend says it is gone


def test_the_cache_keeps_the_backend_ids_and_deduplication_mode():
    inner = MemoryBlobStore(deduplication=True)
    store = CachedBlobStore(inner)
    assert store.deduplicating and store.blob_id_factory is inner.blob_id_factory
    assert store.save(store.default_bucket, b"same") == inner.save(inner.default_bucket, b"same")
