"""The vault purge Spark job through spark-submit, on James's tables (maintenance keyspace) and S3.

18 months of entries (``VAULT_PURGE_PER_MONTH`` each, 20 by default: the figure is not the point
here, ``bench/`` measures it) with the retention starting after the 12th month: a dry run lists
the 12 expired months and changes nothing; the purge then deletes exactly their entries (CQL:
metadata, storage information, month listing; S3: the buckets gone, the 6 kept months' objects
all there). The state a killed run leaves (some contents deleted with their metadata still there,
some entries fully purged, one month's S3 bucket already dropped) is made by hand before the
purge, which must finish with the same result; its verification (detection again) finds nothing.
Two spark-submits: the dry run and the purge.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime

import pytest

from mailserver.blob.api import BucketName
from mailserver.model.address import Username
from mailserver.vault.api import BlobStoreDeletedMessageVault
from mailserver.vault.cassandra import CassandraMetadataStore
from mailserver.vault.query import Query
from tests.contract.vault_contract import deleted, fixed
from tests.support.maintenance import report_of, spark_submit

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "purge_deleted_messages_vault"
PER_MONTH = int(os.environ.get("VAULT_PURGE_PER_MONTH", "20"))
MONTHS = [datetime(2024 + (5 + i) // 12, (5 + i) % 12 + 1, 10, tzinfo=UTC) for i in range(18)]   # 2024-06..2025-11
BEGINNING = "2025-06-01T00:00:01Z"   # 2024-06 .. 2025-05 ended before it: 12 expired months
EXPIRED = [f"deleted-messages-{m:%Y-%m}-01" for m in MONTHS[:12]]
KEPT = [f"deleted-messages-{m:%Y-%m}-01" for m in MONTHS[12:]]


def metadata_count(session, bucket: str, owners: list[str]) -> int:
    return sum(len(session.execute("SELECT messageId FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ?",
                                   (bucket, o))) for o in owners)


def listed(session) -> set[str]:
    return {r["bucketname"] for r in session.execute("SELECT bucketName FROM userPerBucket PER PARTITION LIMIT 1", ())}


def s3_objects(store, bucket: str) -> int:
    return len(list(store.list_blobs(BucketName(bucket))))


def test_purge_deletes_exactly_the_expired_months_and_finishes_what_a_killed_run_left(
        stack, spark_env, maintenance_keyspace, vault_s3):
    session = maintenance_keyspace
    owners = [f"p{uuid.uuid4().hex[:8]}@example.com" for _ in range(2)]
    entries: dict[str, list] = {}
    for month in MONTHS:
        vault = BlobStoreDeletedMessageVault(CassandraMetadataStore(session), vault_s3, clock=fixed(month))
        bucket = f"deleted-messages-{month:%Y-%m}-01"
        for n in range(PER_MONTH):
            message = deleted(Username.of(owners[n % 2]), f"{bucket} {n}", deleted_at=month)
            entries.setdefault(bucket, []).append((message, vault.append(message, f"{bucket} {n}".encode())))
    env = {**spark_env, "S3_BUCKET_PREFIX": vault_s3.config.bucket_prefix}
    args = ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--beginning-of-retention", BEGINNING, "--slices", "2"]

    result = spark_submit(JOB, [*args, "--dry-run"], env)
    assert result.returncode == 0, result.stderr[-4000:]
    report = report_of(result.stdout)
    assert report["outcome"] == "DRY_RUN"
    assert report["type"] == "deleted-messages-blob-store-based-garbage-collection"
    assert report["detected"] == {b: PER_MONTH for b in EXPIRED}
    assert report["wouldDeleteBuckets"] == EXPIRED and report["deletedBuckets"] == []
    assert all(metadata_count(session, b, owners) == PER_MONTH for b in EXPIRED + KEPT)
    assert all(s3_objects(vault_s3, b) == PER_MONTH for b in EXPIRED + KEPT)

    # What a run killed half-way leaves behind.
    metadata = CassandraMetadataStore(session)
    first, second, third = EXPIRED[0], EXPIRED[1], EXPIRED[2]
    for _, storage in entries[first][:5]:              # content deleted, metadata not yet
        vault_s3.delete(BucketName(storage.bucket_name), storage.blob_id, force=True)
    for message, _ in entries[second][:5]:              # entries fully purged
        message_id = message.message_id
        storage = metadata.storage_information(message.owner, message_id)
        vault_s3.delete(BucketName(storage.bucket_name), storage.blob_id, force=True)
        metadata.remove(second, message.owner, message_id)
    vault_s3.delete_bucket(BucketName(third))           # a month's bucket already dropped

    result = spark_submit(JOB, args, env)
    assert result.returncode == 0, result.stderr[-4000:]
    report = report_of(result.stdout)
    assert report["outcome"] == "COMPLETED", report
    assert report["deletedBuckets"] == EXPIRED
    assert report["beginningOfRetentionPeriod"] == "2025-06-01T00:00:01+00:00"
    assert report["deletedEntries"] == 12 * PER_MONTH - 5
    assert report["remaining"] == {}   # the job's own second detection: nothing left to purge
    for bucket in EXPIRED:
        assert metadata_count(session, bucket, owners) == 0
        assert BucketName(bucket) not in vault_s3.list_buckets()
        for message, _ in entries[bucket]:
            assert metadata.storage_information(message.owner, message.message_id) is None
    assert listed(session) == set(KEPT)
    for bucket in KEPT:
        assert metadata_count(session, bucket, owners) == PER_MONTH
        assert s3_objects(vault_s3, bucket) == PER_MONTH
    vault = BlobStoreDeletedMessageVault(metadata, vault_s3)
    kept = {m.subject for o in owners for m in vault.search(Username.of(o), Query())}
    assert kept == {f"{b} {n}" for b in KEPT for n in range(PER_MONTH)}
    message, _ = entries[KEPT[0]][0]
    with vault.load(message.owner, message.message_id) as stream:
        assert stream.read() == f"{KEPT[0]} 0".encode()
