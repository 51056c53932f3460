"""The vault purge restarted after a run killed between owners, on James's tables and S3: one spark-submit.

A small vault (216 entries over 18 months, 4 owners, 3 entries per owner and month; the 12 oldest
months expired) is left as a purge killed mid-month leaves it: for every expired month the
partitions of two owners purged whole (contents, ``storageInformation`` rows, partition: the job's
own executor code, run here), a third owner caught inside a flush in one month (its contents
deleted, one of its ``storageInformation`` rows too, its metadata still there), the fourth not
reached; the months' buckets and ``userPerBucket`` listings still there. Two more things a real
vault has: an object with no entry in an expired bucket (an append interrupted before its
metadata), and a message archived again in a kept month (its ``storageInformation`` row rewritten
to point there). The restarted job purges exactly the rest: every expired entry, row, listing,
object and bucket gone, the orphan too; every kept one there, the later copy's row included.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from mailserver.blob.s3 import make_client
from mailserver.vault.cassandra import INSERT_BUCKET_USER, INSERT_METADATA, INSERT_STORAGE
from mailserver.vault.model import StorageInformation, StoredDeletedMessage
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_blobs import S3Access
from spark_apps.common.vault_purge import PurgeTarget, purge_owner_partitions
from tests.support.maintenance import report_of
from tests.support.spark_in_process import run_job
from tests.support.vault_seed import (
    PURGE_BEGINNING,
    PURGE_TASK_TYPE,
    SeededEntry,
    content,
    expected_state,
    listed_months,
    metadata_rows,
    prefixed_vault_store,
    purge_months,
    seed_vault,
    vault_state,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "purge_deleted_messages_vault"
MONTHS, EXPIRED, KEPT = purge_months(day=20, hour=9)
OWNERS = [f"resume{n}@vault.example" for n in range(4)]


@pytest.fixture
def vault_store(stack):
    tag = uuid.uuid4().hex[:8]
    with prefixed_vault_store(stack, f"vr{tag}-", f"vault-resume-{tag}") as store:
        yield store


def archived_again(session, store, entry: SeededEntry, month: str) -> SeededEntry:
    """``entry``'s message archived a second time, in ``month``: a new object, its storage row rewritten."""
    blob_id = str(uuid.uuid4())
    stored = StoredDeletedMessage.from_payload(entry.payload)
    payload = StoredDeletedMessage(stored.message, StorageInformation(month, blob_id)).payload()
    make_client(store.config).put_object(Bucket=store.config.bucket_prefix + month, Key=blob_id,
                                         Body=content(entry.message_id))
    session.execute(INSERT_STORAGE, (entry.owner, entry.message_id, month, blob_id))
    session.execute(INSERT_METADATA, (month, entry.owner, entry.message_id, payload))
    session.execute(INSERT_BUCKET_USER, (month, entry.owner))
    return SeededEntry(month, entry.owner, entry.message_id, blob_id, payload, entry.size)


def test_a_purge_killed_between_owners_is_finished_by_the_next_run_exactly(
        stack, spark_env, maintenance_keyspace, vault_store):
    session = maintenance_keyspace
    entries = seed_vault(session, vault_store, MONTHS, 18 * 12, OWNERS)
    assert Counter((e.bucket, e.owner) for e in entries) == {(b, o): 3 for b in EXPIRED + KEPT for o in OWNERS}
    client = make_client(vault_store.config)
    prefix = vault_store.config.bucket_prefix
    orphan = str(uuid.uuid4())
    client.put_object(Bucket=prefix + EXPIRED[3], Key=orphan, Body=b"content whose append stopped before its rows")
    again = archived_again(session, vault_store, next(e for e in entries if e.bucket == EXPIRED[1]
                                                      and e.owner == OWNERS[3]), KEPT[0])

    # What a killed run leaves: owners 0 and 1 purged in every expired month, owner 2 caught in a flush.
    target = PurgeTarget(CqlEndpoint(stack.cassandra_hosts, stack.cassandra_port, session.keyspace),
                         S3Access(stack.s3_endpoint, stack.s3_access_key, stack.s3_secret_key, stack.s3_region),
                         prefix, PURGE_TASK_TYPE, f"killed-{uuid.uuid4().hex[:8]}")
    killed = purge_owner_partitions(target, [(month, owner) for month in EXPIRED for owner in OWNERS[:2]])
    assert killed.failures == [] and sum(killed.entries.values()) == 12 * 2 * 3
    caught = [e for e in entries if e.bucket == EXPIRED[0] and e.owner == OWNERS[2]]
    for e in caught:
        client.delete_object(Bucket=prefix + e.bucket, Key=e.blob_id)
    session.execute("DELETE FROM storageInformation WHERE owner = ? AND messageId = ?",
                    (caught[0].owner, caught[0].message_id))
    left = [e for e in entries if e.bucket in EXPIRED and e.owner in OWNERS[2:]]
    assert Counter(b for b, _, _ in metadata_rows(session) if b in EXPIRED) == {b: 6 for b in EXPIRED}
    assert listed_months(session) == set(EXPIRED + KEPT)

    env = {**spark_env, "S3_BUCKET_PREFIX": prefix}
    args = ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--beginning-of-retention", PURGE_BEGINNING, "--slices", "4",
            "--run-key", f"restart-{uuid.uuid4().hex[:8]}"]
    restarted = run_job(JOB, args, env)
    assert restarted.returncode == 0, restarted.stderr[-4000:]
    report = report_of(restarted.stdout)
    assert report["outcome"] == "COMPLETED" and report["type"] == PURGE_TASK_TYPE, report
    assert report["detected"] == {b: 6 for b in EXPIRED}             # only what the killed run had not done
    assert report["deletedEntries"] == len(left) == 12 * 2 * 3
    assert report["deletedOrphanObjects"] == 1                       # found by listing what was left
    assert report["expiredBuckets"] == 12 and report["deletedBuckets"] == EXPIRED
    assert report["remaining"] == {} and report["errors"] == []

    expected = expected_state([e for e in entries if e.bucket in KEPT] + [again])
    assert vault_state(session, vault_store) == expected
    _, storage, months, _ = expected
    assert storage[(again.owner, again.message_id)] == (KEPT[0], again.blob_id)   # survives its expired original
    assert months == set(KEPT)


def test_a_failed_content_delete_keeps_its_owner_partitions_and_a_rerun_purges_them(
        stack, maintenance_keyspace, vault_store):
    """Contents and storage rows go at once, the partitions only after every S3 request succeeded: an S3
    server refusing the requests leaves every partition and object, and the rerun purges them all."""
    session = maintenance_keyspace
    entries = seed_vault(session, vault_store, MONTHS, 18 * 2, OWNERS[:2])
    prefix = vault_store.config.bucket_prefix
    pairs = [(month, owner) for month in EXPIRED[:3] for owner in OWNERS[:2]]
    endpoint = CqlEndpoint(stack.cassandra_hosts, stack.cassandra_port, session.keyspace)
    refused = S3Access(stack.s3_endpoint, f"unknown-{uuid.uuid4().hex[:8]}", "not-the-secret", stack.s3_region)
    run_key = f"refused-{uuid.uuid4().hex[:8]}"

    failed = purge_owner_partitions(PurgeTarget(endpoint, refused, prefix, PURGE_TASK_TYPE, run_key), pairs)
    assert sorted((f["bucketname"], f["owner"]) for f in failed.failures) == sorted(pairs)
    assert sum(failed.entries.values()) == 0
    metadata, _, _, objects = vault_state(session, vault_store)
    assert metadata == expected_state(entries)[0]                    # every partition kept for the rerun
    assert objects == expected_state(entries)[3]                     # every object still there

    access = S3Access(stack.s3_endpoint, stack.s3_access_key, stack.s3_secret_key, stack.s3_region)
    rerun = purge_owner_partitions(PurgeTarget(endpoint, access, prefix, PURGE_TASK_TYPE, run_key), pairs)
    assert rerun.failures == [] and rerun.entries == {month: 2 for month in EXPIRED[:3]}
    metadata, storage, _, objects = vault_state(session, vault_store)
    assert (metadata, storage) == expected_state([e for e in entries if e.bucket not in EXPIRED[:3]])[:2]
    assert all(objects[month] == {} for month in EXPIRED[:3])        # emptied; the buckets are the job's to drop
    assert rerun.seconds["contentDeletes"] > 0 and rerun.seconds["partitionReads"] > 0   # what the report sums
