"""The vault's metadata in dicts, for unit tests and single-process tools; thread-safe."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from mailserver.blob.api import BlobStore
from mailserver.blob.memory import MemoryBlobStore
from mailserver.model.address import Username
from mailserver.model.ids import MessageId
from mailserver.vault.api import BlobStoreDeletedMessageVault, Clock, MetadataStore, utc_now
from mailserver.vault.model import StorageInformation, StoredDeletedMessage


class MemoryMetadataStore(MetadataStore):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, Username], dict[str, StoredDeletedMessage]] = {}
        self._storage: dict[tuple[Username, str], StorageInformation] = {}
        self._users: dict[str, set[Username]] = {}

    def store(self, entry: StoredDeletedMessage) -> None:
        owner, message_id = entry.message.owner, str(entry.message.message_id)
        bucket = entry.storage.bucket_name
        with self._lock:
            self._storage[(owner, message_id)] = entry.storage
            self._entries.setdefault((bucket, owner), {})[message_id] = entry
            self._users.setdefault(bucket, set()).add(owner)

    def storage_information(self, owner: Username, message_id: MessageId) -> StorageInformation | None:
        with self._lock:
            return self._storage.get((owner, str(message_id)))

    def remove(self, bucket: str, owner: Username, message_id: MessageId) -> None:
        with self._lock:
            self._storage.pop((owner, str(message_id)), None)
            self._entries.get((bucket, owner), {}).pop(str(message_id), None)

    def list_messages(self, bucket: str, owner: Username) -> Iterator[StoredDeletedMessage]:
        with self._lock:
            entries = self._entries.get((bucket, owner), {})
            snapshot = [entries[k] for k in sorted(entries)]
        return iter(snapshot)

    def related_buckets(self) -> list[str]:
        with self._lock:
            return sorted(self._users)

    def remove_bucket(self, bucket: str) -> None:
        with self._lock:
            for owner in self._users.get(bucket, set()):
                for message_id in self._entries.pop((bucket, owner), {}):
                    self._storage.pop((owner, message_id), None)
            self._users.pop(bucket, None)


def memory_vault(blobs: BlobStore | None = None, *, clock: Clock = utc_now) -> BlobStoreDeletedMessageVault:
    """The vault on memory metadata and (by default) a memory blob store."""
    return BlobStoreDeletedMessageVault(MemoryMetadataStore(), blobs or MemoryBlobStore(), clock=clock)
