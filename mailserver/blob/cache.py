"""An in-process cache of small blobs in front of another blob store (a decorator).

Why: a mail's content is written at intake and then read back several times by the same
process (LocalDelivery reads the header and the body, the fast-view and search listeners read
them again, the vault copies them on deletion). Each read is an S3 GET, and the S3 client's
CPU was the largest single cost of the mail flow in the profile (docs/benchmarks.md). James has
a cache for the same reason (``CachedBlobStore``, header blobs in Cassandra); this one is kept
in memory because here the reader is usually the writer's own process.

Safe because blobs are immutable: an id always names the same bytes (random ids are never
reused, content-derived ids name their content), so a cached copy can never be stale. The only
difference a reader can see is that a blob deleted *by another process* stays readable here
until evicted; deletes made through this store evict at once.

Bounded: blobs up to ``max_blob_bytes`` are kept, least recently used first out, at most
``max_bytes`` in all. Writes and reads both fill it (reads only of blobs read whole, via
``read``). ``exists`` answers whether the blob can be read through this store: true for a cached
blob without asking the backend.
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator

from .api import BlobId, BlobStore, BlobStream, BucketName
from .spool import Spooled

DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_MAX_BLOB_BYTES = 256 * 1024


class CachedBlobStore(BlobStore):
    def __init__(self, inner: BlobStore, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES) -> None:
        if max_bytes < 0 or max_blob_bytes < 0:
            raise ValueError("cache sizes must not be negative")
        super().__init__(inner.default_bucket, ids=inner.blob_id_factory)
        self.inner = inner
        self.max_bytes = max_bytes
        self.max_blob_bytes = min(max_blob_bytes, max_bytes)
        self._entries: OrderedDict[tuple[BucketName, BlobId], bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    # -- the cache ---------------------------------------------------------------------------------
    def _get(self, key: tuple[BucketName, BlobId]) -> bytes | None:
        with self._lock:
            data = self._entries.get(key)
            if data is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return data

    def _keep(self, key: tuple[BucketName, BlobId], data: bytes) -> None:
        if len(data) > self.max_blob_bytes:
            return
        with self._lock:
            previous = self._entries.pop(key, None)
            if previous is not None:
                self._size -= len(previous)
            self._entries[key] = data
            self._size += len(data)
            while self._size > self.max_bytes:
                _, evicted = self._entries.popitem(last=False)
                self._size -= len(evicted)

    def _forget(self, key: tuple[BucketName, BlobId]) -> None:
        with self._lock:
            data = self._entries.pop(key, None)
            if data is not None:
                self._size -= len(data)

    def _forget_bucket(self, bucket: BucketName) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == bucket]:
                self._size -= len(self._entries.pop(key))

    @property
    def cached_bytes(self) -> int:
        with self._lock:
            return self._size

    # -- BlobStore ---------------------------------------------------------------------------------
    def read(self, bucket: BucketName | str, blob_id: BlobId | str) -> bytes:
        key = (self._bucket(bucket), BlobId.of(blob_id))
        data = self._get(key)
        if data is None:
            data = self.inner.read(*key)
            self._keep(key, data)
        return data

    def _check_bucket(self, bucket: BucketName) -> None:
        self.inner._check_bucket(bucket)

    def _put(self, bucket: BucketName, blob_id: BlobId, content: Spooled) -> None:
        self.inner._put(bucket, blob_id, content)
        if content.size <= self.max_blob_bytes:
            content.file.seek(0)
            self._keep((bucket, blob_id), content.file.read())

    def _open(self, bucket: BucketName, blob_id: BlobId) -> BlobStream:
        data = self._get((bucket, blob_id))
        if data is not None:
            return BlobStream(io.BytesIO(data))
        return self.inner._open(bucket, blob_id)

    def _exists(self, bucket: BucketName, blob_id: BlobId) -> bool:
        # "Readable through this store": a cached blob is (the mail queue checks both blobs of
        # every mail it dequeues, two HEAD requests a mail otherwise).
        with self._lock:
            if (bucket, blob_id) in self._entries:
                return True
        return self.inner._exists(bucket, blob_id)

    def _remove(self, bucket: BucketName, blob_id: BlobId) -> None:
        self._forget((bucket, blob_id))
        self.inner._remove(bucket, blob_id)
        self._forget((bucket, blob_id))   # a read that raced the removal may have cached it again

    def _delete_bucket(self, bucket: BucketName) -> None:
        self._forget_bucket(bucket)
        self.inner._delete_bucket(bucket)

    def _list_buckets(self) -> Iterable[BucketName]:
        return self.inner._list_buckets()

    def _list_blobs(self, bucket: BucketName) -> Iterator[BlobId]:
        return self.inner._list_blobs(bucket)
