"""A deleted-messages vault in bulk: entries over consecutive months, as the server's vault leaves them.

Each entry is what ``BlobStoreDeletedMessageVault.append`` writes: a small content object in the S3
bucket of its month (random blob id, James's ``PlainBlobId``), then the adapter's own three
statements (``storageInformation``, ``deletedMessageMetadata`` with James's JSON payload,
``userPerBucket``). Written concurrently (a thread pool of S3 puts, ``execute_concurrent`` for CQL)
in chunks, so 100,000 entries take minutes rather than hours and a million fit in memory. A caller
may write the content objects some other way (``put``: bench/vault_purge.py's ``--seed disk`` writes
them straight into S3Proxy's filesystem backend); the buckets and the CQL rows are written the same.

Also the read-backs a purge is checked with: every metadata row, storage row, listed month and S3
object of the keyspace and of the store's prefix (the keyspace holds nothing else).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mailserver.blob.api import BucketName
from mailserver.blob.s3 import S3BlobStore, S3Config, make_client
from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import MailAddress, Username
from mailserver.model.ids import MailboxId, MessageId
from mailserver.vault.buckets import bucket_for
from mailserver.vault.cassandra import INSERT_BUCKET_USER, INSERT_METADATA, INSERT_STORAGE
from mailserver.vault.model import DeletedMessage, StorageInformation, StoredDeletedMessage

VAULT_PREFIX = "deleted-messages-"
CHUNK = 10_000


@dataclass(frozen=True)
class SeededEntry:
    bucket: str
    owner: str
    message_id: str
    blob_id: str
    payload: str
    size: int


def content(message_id: str) -> bytes:
    """The small content of an entry (a purge never reads it; its size is checked in the listing)."""
    return f"Subject: vault entry {message_id}\r\n\r\nDeleted long ago.\r\n".encode()


def months_from(first: datetime, count: int) -> list[datetime]:
    """``count`` consecutive months from ``first``'s (the same day and time in each)."""
    return [first.replace(year=first.year + (first.month - 1 + i) // 12, month=(first.month - 1 + i) % 12 + 1)
            for i in range(count)]


# The purge the vault tests run: 18 months of entries from June 2024 and a retention period that begins on
# 1 June 2025, so the buckets of the first 12 months have expired and those of the last 6 are kept.
PURGE_TASK_TYPE = "deleted-messages-blob-store-based-garbage-collection"   # James's task type
PURGE_BEGINNING = "2025-06-01T00:00:01Z"


def purge_months(day: int, hour: int) -> tuple[list[datetime], list[str], list[str]]:
    """The 18 months (2024-06 .. 2025-11, at ``day`` and ``hour`` UTC), the expired buckets and the kept ones."""
    months = months_from(datetime(2024, 6, day, hour, tzinfo=UTC), 18)
    buckets = [bucket_for(month) for month in months]
    return months, buckets[:12], buckets[12:]


def _entry(deleted_at: datetime, owner: str) -> SeededEntry:
    message_id = MessageId.generate()
    storage = StorageInformation(bucket_for(deleted_at), str(uuid.uuid4()))
    message = DeletedMessage(
        message_id=message_id, origin_mailboxes=(MailboxId.generate(),), owner=Username.of(owner),
        delivery_date=deleted_at - timedelta(days=2), deletion_date=deleted_at,
        sender=MailAddress.of("alice@example.com"), recipients=(MailAddress.of(owner),),
        subject=f"entry {message_id}", has_attachment=False, size=len(content(str(message_id))))
    return SeededEntry(storage.bucket_name, owner, str(message_id), storage.blob_id,
                       StoredDeletedMessage(message, storage).payload(), message.size)


def _execute(session: CassandraSession, cql: str, params: Sequence[tuple], concurrency: int) -> None:
    from cassandra.concurrent import execute_concurrent_with_args

    for result in execute_concurrent_with_args(session.session, session.prepare(cql), params,
                                               concurrency=concurrency, raise_on_first_error=True):
        assert result.success


def seed_vault(session: CassandraSession, store: S3BlobStore, months: Sequence[datetime], entries: int,
               owners: Sequence[str], *, threads: int = 16, concurrency: int = 64, keep: bool = True,
               put_object: Callable[[str, str, bytes], None] | None = None,
               timings: dict[str, float] | None = None) -> list[SeededEntry]:
    """``entries`` entries spread evenly over ``months`` and ``owners``; the entries (none unless ``keep``).

    ``put_object(s3 bucket, key, body)`` writes one content object (default: an S3 PUT); the buckets
    are created through S3 first either way. ``timings`` (if given) adds up the seconds spent making
    the entries, waiting for the contents (written while the previous chunk's rows are) and writing
    the CQL rows."""
    client = make_client(store.config)
    for bucket in {bucket_for(m) for m in months}:
        client.create_bucket(Bucket=store.resolve(BucketName(bucket)))
    write = put_object or (lambda bucket, key, body: client.put_object(Bucket=bucket, Key=key, Body=body))

    def put(entry: SeededEntry) -> None:
        write(store.resolve(BucketName(entry.bucket)), entry.blob_id, content(entry.message_id))

    seeded: list[SeededEntry] = []
    spent = timings if timings is not None else {}

    def add(phase: str, since: float) -> float:
        now = time.perf_counter()
        spent[phase] = spent.get(phase, 0.0) + now - since
        return now

    def finish(chunk: list[SeededEntry], contents: list[Future[None]]) -> None:
        """The chunk's CQL rows, once all its contents are written: content first, metadata after, as the vault
        appends."""
        started = time.perf_counter()
        for future in contents:
            future.result()
        started = add("content", started)
        _execute(session, INSERT_STORAGE, [(e.owner, e.message_id, e.bucket, e.blob_id) for e in chunk], concurrency)
        _execute(session, INSERT_METADATA, [(e.bucket, e.owner, e.message_id, e.payload) for e in chunk],
                 concurrency)
        _execute(session, INSERT_BUCKET_USER, sorted({(e.bucket, e.owner) for e in chunk}), concurrency)
        add("cql", started)
        if keep:
            seeded.extend(chunk)

    # Pipelined: the contents of one chunk are written (the pool) while the rows of the previous one are.
    with ThreadPoolExecutor(threads) as pool:
        previous: tuple[list[SeededEntry], list[Future[None]]] | None = None
        for start in range(0, entries, CHUNK):
            started = time.perf_counter()
            chunk = [_entry(months[i % len(months)], owners[(i // len(months)) % len(owners)])
                     for i in range(start, min(entries, start + CHUNK))]
            add("entries", started)
            contents = [pool.submit(put, e) for e in chunk]
            if previous is not None:
                finish(*previous)
            previous = chunk, contents
        if previous is not None:
            finish(*previous)
    return seeded


def _scan(session: CassandraSession, cql: str) -> Iterator[dict[str, Any]]:
    from cassandra.query import SimpleStatement

    return iter(session.session.execute(SimpleStatement(cql, fetch_size=5000), timeout=120))


def metadata_rows(session: CassandraSession) -> dict[tuple[str, str, str], str]:
    """Every ``deletedMessageMetadata`` row: (bucket, owner, message id) -> payload."""
    return {(r["bucketname"], r["owner"], r["messageid"]): r["payload"] for r in _scan(
        session, "SELECT bucketName, owner, messageId, payload FROM deletedMessageMetadata")}


def storage_rows(session: CassandraSession) -> dict[tuple[str, str], tuple[str, str]]:
    """Every ``storageInformation`` row: (owner, message id) -> (bucket, blob id)."""
    return {(r["owner"], r["messageid"]): (r["bucketname"], r["blobid"]) for r in _scan(
        session, "SELECT owner, messageId, bucketName, blobId FROM storageInformation")}


def listed_months(session: CassandraSession) -> set[str]:
    return {r["bucketname"] for r in _scan(session, "SELECT bucketName FROM userPerBucket PER PARTITION LIMIT 1")}


def s3_listing(store: S3BlobStore) -> dict[str, dict[str, int]]:
    """Every vault bucket of the store's prefix: month -> {key: size}."""
    client = make_client(store.config)
    prefix = store.config.bucket_prefix + VAULT_PREFIX
    listing: dict[str, dict[str, int]] = {}
    for bucket in client.list_buckets().get("Buckets", []):
        if bucket["Name"].startswith(prefix):
            objects = listing[bucket["Name"][len(store.config.bucket_prefix):]] = {}
            for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket["Name"]):
                objects.update({o["Key"]: o["Size"] for o in page.get("Contents", [])})
    return listing


# metadata rows, storage rows, listed months, S3 listing (month -> {key: size})
VaultState = tuple[dict, dict, set[str], dict[str, dict[str, int]]]


def expected_state(entries: Sequence[SeededEntry]) -> VaultState:
    """What ``metadata_rows``, ``storage_rows``, ``listed_months`` and ``s3_listing`` read when just ``entries``
    are in the vault."""
    s3: dict[str, dict[str, int]] = {}
    for e in entries:
        s3.setdefault(e.bucket, {})[e.blob_id] = e.size
    return ({(e.bucket, e.owner, e.message_id): e.payload for e in entries},
            {(e.owner, e.message_id): (e.bucket, e.blob_id) for e in entries},
            {e.bucket for e in entries}, s3)


def vault_state(session: CassandraSession, store: S3BlobStore) -> VaultState:
    """The vault as ``expected_state`` describes it: its three tables and its S3 buckets, read back."""
    return metadata_rows(session), storage_rows(session), listed_months(session), s3_listing(store)


@contextmanager
def prefixed_vault_store(stack: Any, prefix: str, default_bucket: str) -> Iterator[S3BlobStore]:
    """An S3 store of the stack whose buckets carry ``prefix`` (``deleted-messages-*`` names are global),
    every bucket of it deleted afterwards."""
    store = S3BlobStore(S3Config(endpoint_url=stack.s3_endpoint, access_key=stack.s3_access_key,
                                 secret_key=stack.s3_secret_key, region=stack.s3_region,
                                 bucket_prefix=prefix, default_bucket=default_bucket))
    try:
        yield store
    finally:
        for bucket in store.list_buckets():
            store.delete_bucket(bucket)
