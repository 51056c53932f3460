"""The blob store in a dict, for unit tests and single-process tools; thread-safe."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator

from .api import DEFAULT_BUCKET, BlobId, BlobIdFactory, BlobNotFound, BlobStore, BlobStream, BucketName
from .spool import Spooled


class MemoryBlobStore(BlobStore):
    def __init__(self, default_bucket: BucketName | str = DEFAULT_BUCKET, *, deduplication: bool = False,
                 ids: BlobIdFactory | None = None) -> None:
        super().__init__(default_bucket, deduplication=deduplication, ids=ids)
        self._lock = threading.Lock()
        self._buckets: dict[BucketName, dict[BlobId, bytes]] = {}

    def sharing_buckets(self, ids: BlobIdFactory | None = None) -> MemoryBlobStore:
        """Another store over these same buckets, with its own ids: two servers on one S3."""
        other = MemoryBlobStore(self.default_bucket, ids=ids or self.blob_id_factory)
        other._lock, other._buckets = self._lock, self._buckets
        return other

    def _put(self, bucket: BucketName, blob_id: BlobId, content: Spooled) -> None:
        data = content.file.read()
        with self._lock:
            self._buckets.setdefault(bucket, {})[blob_id] = data

    def _open(self, bucket: BucketName, blob_id: BlobId) -> BlobStream:
        with self._lock:
            data = self._buckets.get(bucket, {}).get(blob_id)
        if data is None:
            raise BlobNotFound(bucket, blob_id)
        return BlobStream(io.BytesIO(data))

    def _exists(self, bucket: BucketName, blob_id: BlobId) -> bool:
        with self._lock:
            return blob_id in self._buckets.get(bucket, {})

    def _remove(self, bucket: BucketName, blob_id: BlobId) -> None:
        with self._lock:
            self._buckets.get(bucket, {}).pop(blob_id, None)

    def _delete_bucket(self, bucket: BucketName) -> None:
        with self._lock:
            self._buckets.pop(bucket, None)

    def _list_buckets(self) -> list[BucketName]:
        with self._lock:
            return list(self._buckets)

    def _list_blobs(self, bucket: BucketName) -> Iterator[BlobId]:
        with self._lock:
            snapshot = sorted(self._buckets.get(bucket, {}))
        return iter(snapshot)
