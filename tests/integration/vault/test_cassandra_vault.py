"""The vault contract on James's Cassandra tables and S3, and what James would read there (CQL, S3 listing)."""

from __future__ import annotations

import json
import uuid

import pytest

from mailserver.blob.api import BucketName
from mailserver.model.address import Username
from mailserver.vault.api import BlobStoreDeletedMessageVault
from mailserver.vault.cassandra import CassandraMetadataStore
from mailserver.vault.query import Query
from tests.contract.vault_contract import NOW, VaultContract, deleted, fixed, raw

pytestmark = pytest.mark.integration


class TestCassandraVault(VaultContract):
    @pytest.fixture
    def vault_at(self, cassandra, vault_s3):
        return lambda clock: BlobStoreDeletedMessageVault(CassandraMetadataStore(cassandra), vault_s3, clock=clock)


def test_rows_and_object_are_where_james_reads_them(cassandra, vault_s3):
    vault = BlobStoreDeletedMessageVault(CassandraMetadataStore(cassandra), vault_s3, clock=fixed(NOW))
    owner = Username.of(f"j{uuid.uuid4().hex[:10]}@example.com")
    message = deleted(owner, "invoice 42")
    storage = vault.append(message, raw("invoice 42"))

    bucket = "deleted-messages-2001-05-01"
    info = cassandra.one("SELECT bucketName, blobId FROM storageInformation WHERE owner = ? AND messageId = ?",
                         (owner.value, str(message.message_id)))
    assert info == {"bucketname": bucket, "blobid": storage.blob_id}
    row = cassandra.one("SELECT payload FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ? "
                        "AND messageId = ?", (bucket, owner.value, str(message.message_id)))
    payload = json.loads(row["payload"])
    assert payload["storageInformation"] == {"bucketName": bucket, "blobId": storage.blob_id}
    assert payload["deletedMessage"]["subject"] == "invoice 42"
    assert payload["deletedMessage"]["owner"] == owner.value
    users = cassandra.execute("SELECT user FROM userPerBucket WHERE bucketName = ?", (bucket,))
    assert owner.value in {u["user"] for u in users}
    # The object: in the month's S3 bucket (with this session's prefix), under the plain blob id.
    s3 = vault_s3.client
    body = s3.get_object(Bucket=vault_s3.resolve(BucketName(bucket)), Key=storage.blob_id)["Body"]
    assert body.read() == raw("invoice 42")
    uuid.UUID(storage.blob_id)   # plain ids: vault content is not deduplicated

    assert vault.delete(owner, message.message_id)
    assert cassandra.one("SELECT blobId FROM storageInformation WHERE owner = ? AND messageId = ?",
                         (owner.value, str(message.message_id))) is None
    assert list(vault.search(owner, Query())) == []
