"""The deleted-messages vault port, and its one implementation over a metadata store and a blob store.

As James's ``BlobStoreDeletedMessageVault``: the content of a deleted message goes to the blob
bucket of the current month (``deleted-messages-YYYY-MM-01``, UTC), its metadata to a
``MetadataStore`` (memory, or James's three Cassandra tables). Expiry drops whole months: a
bucket expires when its month ended before ``now - retention``; its blobs go first, then its
metadata, so a run stopped half-way is finished by the next one (deleting a gone bucket is
harmless and the bucket stays listed until its last metadata row is removed).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime

from mailserver.blob.api import (
    BlobContent,
    BlobId,
    BlobNotFound,
    BlobStore,
    BlobStream,
    BucketName,
    StoragePolicy,
)
from mailserver.blob.spool import Spooled
from mailserver.model.address import Username
from mailserver.model.ids import MessageId
from mailserver.vault.buckets import bucket_for, is_expired
from mailserver.vault.model import DeletedMessage, StorageInformation, StoredDeletedMessage
from mailserver.vault.query import Query

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


class DeletedMessageContentNotFound(LookupError):
    def __init__(self, owner: Username, message_id: MessageId) -> None:
        super().__init__(f"no content in the vault for message {message_id} of {owner}")
        self.owner, self.message_id = owner, message_id


class DeletedMessageVault(ABC):
    """James's ``DeletedMessageVault``."""

    @abstractmethod
    def append(self, message: DeletedMessage, content: BlobContent) -> StorageInformation:
        """Store the content, then the metadata; raises when either cannot be written."""

    @abstractmethod
    def search(self, owner: Username, query: Query) -> Iterator[DeletedMessage]: ...

    @abstractmethod
    def load(self, owner: Username, message_id: MessageId) -> BlobStream:
        """The stored content (close it); DeletedMessageContentNotFound when absent."""

    @abstractmethod
    def delete(self, owner: Username, message_id: MessageId) -> bool:
        """Remove one entry (metadata, then content); False when there was none."""

    @abstractmethod
    def expired_buckets(self, beginning_of_retention: datetime) -> list[str]: ...

    @abstractmethod
    def delete_expired_bucket(self, bucket: str) -> None:
        """Delete one month: its content, then its metadata (idempotent: a stopped run is finished)."""

    def delete_expired(self, beginning_of_retention: datetime) -> list[str]:
        """Delete every month that ended before ``beginning_of_retention``; the buckets deleted."""
        deleted = []
        for bucket in self.expired_buckets(beginning_of_retention):
            self.delete_expired_bucket(bucket)
            deleted.append(bucket)
        return deleted


class MetadataStore(ABC):
    """James's ``DeletedMessageMetadataVault``: where entries are listed and found."""

    @abstractmethod
    def store(self, entry: StoredDeletedMessage) -> None: ...

    @abstractmethod
    def storage_information(self, owner: Username, message_id: MessageId) -> StorageInformation | None: ...

    @abstractmethod
    def remove(self, bucket: str, owner: Username, message_id: MessageId) -> None: ...

    @abstractmethod
    def list_messages(self, bucket: str, owner: Username) -> Iterator[StoredDeletedMessage]: ...

    @abstractmethod
    def related_buckets(self) -> list[str]:
        """Buckets having at least one user (James: ``userPerBucket`` partitions)."""

    @abstractmethod
    def remove_bucket(self, bucket: str) -> None:
        """Every metadata row of a bucket, the bucket's user list last."""


class BlobStoreDeletedMessageVault(DeletedMessageVault):
    def __init__(self, metadata: MetadataStore, blobs: BlobStore, *, clock: Clock = utc_now) -> None:
        # Vault content is never deduplicated (James): deleting one entry must not remove another's.
        self.metadata = metadata
        self.blobs = blobs if not blobs.deduplicating else PlainIdBlobStore(blobs)
        self._now = clock

    def append(self, message: DeletedMessage, content: BlobContent) -> StorageInformation:
        bucket = bucket_for(self._now())
        blob_id = self.blobs.save(bucket, content, StoragePolicy.LOW_COST)
        storage = StorageInformation(bucket, str(blob_id))
        self.metadata.store(StoredDeletedMessage(message, storage))
        return storage

    def search(self, owner: Username, query: Query) -> Iterator[DeletedMessage]:
        def every() -> Iterable[DeletedMessage]:
            for bucket in self.metadata.related_buckets():
                for entry in self.metadata.list_messages(bucket, owner):
                    yield entry.message
        return query.filter(every())

    def load(self, owner: Username, message_id: MessageId) -> BlobStream:
        storage = self.metadata.storage_information(owner, message_id)
        if storage is None:
            raise DeletedMessageContentNotFound(owner, message_id)
        try:
            return self.blobs.read_stream(storage.bucket_name, storage.blob_id)
        except BlobNotFound:
            raise DeletedMessageContentNotFound(owner, message_id) from None

    def delete(self, owner: Username, message_id: MessageId) -> bool:
        storage = self.metadata.storage_information(owner, message_id)
        if storage is None:
            return False
        self.metadata.remove(storage.bucket_name, owner, message_id)
        self.blobs.delete(storage.bucket_name, storage.blob_id, force=True)
        return True

    def expired_buckets(self, beginning_of_retention: datetime) -> list[str]:
        return sorted(b for b in self.metadata.related_buckets() if is_expired(b, beginning_of_retention))

    def delete_expired_bucket(self, bucket: str) -> None:
        self.blobs.delete_bucket(bucket)
        self.metadata.remove_bucket(bucket)


class PlainIdBlobStore(BlobStore):
    """Another store's buckets seen with random blob ids (James's PlainBlobId) and real deletes."""

    def __init__(self, inner: BlobStore) -> None:
        super().__init__(inner.default_bucket, deduplication=False)
        self.inner = inner

    def _check_bucket(self, bucket: BucketName) -> None:
        self.inner._check_bucket(bucket)

    def _put(self, bucket: BucketName, blob_id: BlobId, content: Spooled) -> None:
        self.inner._put(bucket, blob_id, content)

    def _open(self, bucket: BucketName, blob_id: BlobId) -> BlobStream:
        return self.inner._open(bucket, blob_id)

    def _exists(self, bucket: BucketName, blob_id: BlobId) -> bool:
        return self.inner._exists(bucket, blob_id)

    def _remove(self, bucket: BucketName, blob_id: BlobId) -> None:
        self.inner._remove(bucket, blob_id)

    def _delete_bucket(self, bucket: BucketName) -> None:
        self.inner._delete_bucket(bucket)

    def _list_buckets(self) -> Iterable[BucketName]:
        return self.inner._list_buckets()

    def _list_blobs(self, bucket: BucketName) -> Iterator[BlobId]:
        return self.inner._list_blobs(bucket)
