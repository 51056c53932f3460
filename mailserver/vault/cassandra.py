"""The vault's metadata in James's tables: ``storageInformation``, ``deletedMessageMetadata``, ``userPerBucket``.

Statements and their order are James's ``CassandraDeletedMessageMetadataVault``: a store writes
the storage information, then the metadata row, then the bucket's user (so a bucket is listed
only once it holds something findable); removing a bucket deletes, user by user, each entry's
storage information and then the user's metadata partition, and the bucket's user list last.
An unreadable payload is logged and skipped, as James's ``MetadataSerializer`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from mailserver.blob.api import BlobStore
from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username
from mailserver.model.ids import MessageId
from mailserver.vault.api import BlobStoreDeletedMessageVault, Clock, MetadataStore, utc_now
from mailserver.vault.model import StorageInformation, StoredDeletedMessage

log = logging.getLogger(__name__)

# James's statements of a store, in its order (bulk seeders of tests and benchmarks use them too).
INSERT_STORAGE = "INSERT INTO storageInformation (owner, messageId, bucketName, blobId) VALUES (?, ?, ?, ?)"
INSERT_METADATA = "INSERT INTO deletedMessageMetadata (bucketName, owner, messageId, payload) VALUES (?, ?, ?, ?)"
INSERT_BUCKET_USER = "INSERT INTO userPerBucket (bucketName, user) VALUES (?, ?)"


class CassandraMetadataStore(MetadataStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def store(self, entry: StoredDeletedMessage) -> None:
        owner, message_id = entry.message.owner.value, str(entry.message.message_id)
        bucket = entry.storage.bucket_name
        self.s.execute(INSERT_STORAGE, (owner, message_id, bucket, entry.storage.blob_id))
        self.s.execute(INSERT_METADATA, (bucket, owner, message_id, entry.payload()))
        self.s.execute(INSERT_BUCKET_USER, (bucket, owner))

    def storage_information(self, owner: Username, message_id: MessageId) -> StorageInformation | None:
        row = self.s.one("SELECT bucketName, blobId FROM storageInformation WHERE owner = ? AND messageId = ?",
                         (owner.value, str(message_id)))
        return StorageInformation(row["bucketname"], row["blobid"]) if row else None

    def remove(self, bucket: str, owner: Username, message_id: MessageId) -> None:
        self.s.execute("DELETE FROM storageInformation WHERE owner = ? AND messageId = ?",
                       (owner.value, str(message_id)))
        self.s.execute("DELETE FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ? AND messageId = ?",
                       (bucket, owner.value, str(message_id)))

    def list_messages(self, bucket: str, owner: Username) -> Iterator[StoredDeletedMessage]:
        rows = self.s.execute("SELECT messageId, payload FROM deletedMessageMetadata "
                              "WHERE bucketName = ? AND owner = ?", (bucket, owner.value))
        for row in rows:
            try:
                yield StoredDeletedMessage.from_payload(row["payload"])
            except (ValueError, KeyError, TypeError) as exc:
                log.error("unreadable vault metadata %s/%s/%s: %s", bucket, owner, row["messageid"], exc)

    def message_ids(self, bucket: str, owner: Username) -> list[str]:
        return [r["messageid"] for r in self.s.execute(
            "SELECT messageId FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ?", (bucket, owner.value))]

    def users(self, bucket: str) -> list[Username]:
        return [Username(r["user"]) for r in self.s.execute(
            "SELECT user FROM userPerBucket WHERE bucketName = ?", (bucket,))]

    def related_buckets(self) -> list[str]:
        return sorted(r["bucketname"] for r in self.s.execute(
            "SELECT bucketName FROM userPerBucket PER PARTITION LIMIT 1", ()))

    def remove_bucket(self, bucket: str) -> None:
        for user in self.users(bucket):
            for message_id in self.message_ids(bucket, user):
                self.s.execute("DELETE FROM storageInformation WHERE owner = ? AND messageId = ?",
                               (user.value, message_id))
            self.s.execute("DELETE FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ?",
                           (bucket, user.value))
        self.s.execute("DELETE FROM userPerBucket WHERE bucketName = ?", (bucket,))


def cassandra_vault(session: CassandraSession, blobs: BlobStore, *, clock: Clock = utc_now
                    ) -> BlobStoreDeletedMessageVault:
    """The distributed vault: metadata in the keyspace, content in ``blobs`` (S3) per month bucket."""
    return BlobStoreDeletedMessageVault(CassandraMetadataStore(session), blobs, clock=clock)
