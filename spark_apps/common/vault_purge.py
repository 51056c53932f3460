"""The executors' side of the vault purge: the owner partitions of expired months, deleted in bulk.

One Spark task purges one slice: a list of (month, owner) pairs, the owner partitions of
``deletedMessageMetadata`` of expired months. Owners of the same month are taken ``OWNERS_PER_GROUP``
at a time, ``2 * concurrency`` groups at once (threads sharing the worker's CQL session and S3
client, both thread-safe), their S3 requests ``concurrency`` at once. For a group, in this order
(content and storage rows first, the metadata last, as James):

1. its partitions are read (message id, payload, the payload's write time), the first page of
   every partition at once, the next pages as they come;
2. every ``MAX_KEYS`` entries: their content objects go in one S3 ``DeleteObjects`` request (the
   blob id is in the payload), handed to the task's S3 pool, while this thread deletes their
   ``storageInformation`` rows, in unlogged batches of about sixty deletes with several batches in
   flight (both are independent: the partition still names every entry until step 3). Those rows
   are one each (the table's partition key is the owner and the message id), the only per-entry
   work, as in James. Each delete carries the payload's write time (``USING TIMESTAMP``): the row
   written with the entry goes, while a row written later (the same message archived again in a
   later month, which James would lose) survives;
3. once every S3 request of the group has succeeded, the owner partitions themselves, one
   partition delete each.

The S3 server is the slowest of the three (docs/benchmarks.md): with twice as many groups as S3
requests in flight, a group reads and deletes rows while another's contents are being deleted.
Each task reports its thread-seconds per kind of request (``executorSeconds`` in the job's report).

A killed run leaves whole owner partitions (a partition goes in one delete, after its entries'
content and storage rows), so the next run reads the unfinished ones again and redoes their
deletes, which are idempotent. A slice that finished without failures is checkpointed from the
executor, as soon as it is done. Lives outside the job module on purpose: a job runs as
``__main__`` and its globals are pickled by value, which a lock or a client cannot be.
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from spark_apps.common.bookkeeping import Checkpoints, SliceResult
from spark_apps.common.cql import CqlEndpoint, CqlSession
from spark_apps.common.mail_blobs import S3Access
from spark_apps.common.s3_bulk import MAX_KEYS, delete_keys, use_content_md5
from spark_apps.common.throttle import RateLimiter

log = logging.getLogger("mailplatform.vault_purge")

SELECT_PARTITION = ("SELECT messageId, payload, WRITETIME(payload) AS written FROM deletedMessageMetadata "
                    "WHERE bucketName = ? AND owner = ?")
DELETE_STORAGE_WRITTEN_UP_TO = "DELETE FROM storageInformation USING TIMESTAMP ? WHERE owner = ? AND messageId = ?"
DELETE_STORAGE = "DELETE FROM storageInformation WHERE owner = ? AND messageId = ?"
DELETE_PARTITION = "DELETE FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ?"
DELETED_ENTRIES = "deletedEntries"

OWNERS_PER_GROUP = 16
PAGE_SIZE = 1000
# Cassandra warns from 5 KiB of batch (batch_size_warn_threshold) and fails at 50 KiB; a storage
# delete weighs about its key's bytes. The batch spans partitions on purpose: it is not for
# atomicity but to carry many deletes in one request, the Python client's CPU per request being
# the limit (single deletes ran at about 3,000/s here, batches of 50 at 20,000 to 34,000/s).
STORAGE_BATCH_BYTES = 4000
STORAGE_BATCH_STATEMENTS = 64
STATEMENTS_IN_FLIGHT = 8
GROUPS_PER_S3_REQUEST = 2   # groups in flight per S3 request in flight: one deleting contents, one the rest


class _QuietCrossPartitionBatches(logging.Filter):
    """The driver logs the server's 'Unlogged batch covering N partitions' warning for every batch: it is
    this module's design, and once per batch would flood the executors' logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Unlogged batch covering" not in record.getMessage()


logging.getLogger("cassandra.protocol").addFilter(_QuietCrossPartitionBatches())


class Entry(NamedTuple):   # a tuple: the cheapest object per entry
    owner: str
    message_id: str
    blob_id: str | None      # None: the payload does not say (its object goes with the month's bucket)
    written: int | None      # the payload's write time (microseconds), None when unknown


def blob_id_of(payload: str | None) -> str | None:
    """Pure: the content's blob id in an entry's James payload, None when the payload does not give one."""
    try:
        blob_id = json.loads(payload or "")["storageInformation"]["blobId"]
    except (ValueError, TypeError, KeyError):
        return None
    return blob_id if isinstance(blob_id, str) and blob_id else None


def slice_of(month: str, owner: str, slices: int) -> int:
    """Pure: the checkpointed slice of an owner partition (stable across runs and processes)."""
    return zlib.crc32(f"{month}\x00{owner}".encode()) % slices


def owner_groups(pairs: Iterable[tuple[str, str]], size: int = OWNERS_PER_GROUP) -> list[tuple[str, list[str]]]:
    """Pure: (month, owners) groups of at most ``size`` owners of one month, months in order."""
    by_month: dict[str, list[str]] = {}
    for month, owner in pairs:
        by_month.setdefault(month, []).append(owner)
    return [(month, sorted(owners)[start:start + size])
            for month, owners in sorted(by_month.items()) for start in range(0, len(owners), size)]


def storage_batches(entries: Sequence[Entry], max_bytes: int = STORAGE_BATCH_BYTES,
                    max_statements: int = STORAGE_BATCH_STATEMENTS) -> list[list[Entry]]:
    """Pure: ``entries`` in order, cut into batches under both limits (one entry per batch at least)."""
    batches: list[list[Entry]] = []
    current: list[Entry] = []
    size = 0
    for entry in entries:
        weight = len(entry.owner.encode()) + len(entry.message_id.encode()) + 8
        if current and (size + weight > max_bytes or len(current) >= max_statements):
            batches.append(current)
            current, size = [], 0
        current.append(entry)
        size += weight
    if current:
        batches.append(current)
    return batches


@dataclass(frozen=True)
class PurgeTarget:
    """What an executor needs to purge owner partitions: picklable, no live objects."""

    endpoint: CqlEndpoint
    s3: S3Access
    bucket_prefix: str
    job: str
    run_key: str
    concurrency: int = 8
    rate: float | None = None        # entries per second for this task
    sample_size: int = 1000

    def s3_bucket(self, month: str) -> str:
        return self.bucket_prefix + month


# Thread-seconds of a task, per kind of request (the report's ``executorSeconds``): where the time went.
READS, CONTENTS, STORAGE_ROWS, PARTITIONS, CONTENTS_AWAITED = (
    "partitionReads", "contentDeletes", "storageDeletes", "partitionDeletes", "waitedForContents")


@dataclass
class GroupResult:
    entries: Counter[str] = field(default_factory=Counter)      # per month
    fixed: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))   # per kind of request


class _Stopwatch:
    """Adds the seconds of a ``with`` block to a counter."""

    def __init__(self, seconds: defaultdict[str, float], what: str) -> None:
        self.seconds, self.what = seconds, what

    def __enter__(self) -> None:
        self.started = time.perf_counter()

    def __exit__(self, *_: object) -> None:
        self.seconds[self.what] += time.perf_counter() - self.started


def _delete_contents(s3: Any, bucket: str, keys: Sequence[str]) -> float:
    """One ``DeleteObjects`` request (``keys`` are at most ``MAX_KEYS``); its seconds."""
    started = time.perf_counter()
    delete_keys(s3, bucket, keys)
    return time.perf_counter() - started


class _GroupPurge:
    """One group of owner partitions of one month, as the module's docstring says.

    The S3 requests go to ``contents``, a pool shared by the task's groups: a group's storage rows
    are deleted while its contents are, and other groups read and delete rows meanwhile, so the S3
    server, the slowest of the three, is kept busy."""

    def __init__(self, target: PurgeTarget, cql: CqlSession, s3: Any, limiter: RateLimiter,
                 contents: ThreadPoolExecutor) -> None:
        self.target, self.cql, self.s3, self.limiter, self.contents = target, cql, s3, limiter, contents

    def run(self, month: str, owners: Sequence[str], sample: int) -> GroupResult:
        from cassandra.concurrent import execute_concurrent_with_args

        result = GroupResult()
        pending: list[Future[float]] = []
        buffer: list[Entry] = []
        for owner, rows in self._partitions(month, owners, result.seconds):
            for entry in self._entries(owner, rows, result.seconds):
                buffer.append(entry)
                if len(result.fixed) < sample:
                    result.fixed.append({"kind": month, "bucketname": month, "owner": owner,
                                         "messageid": entry.message_id})
                if len(buffer) == MAX_KEYS:
                    pending.extend(self._flush(month, buffer, result.seconds))
                    result.entries[month] += len(buffer)
                    buffer = []
        if buffer:
            pending.extend(self._flush(month, buffer, result.seconds))
            result.entries[month] += len(buffer)
        with _Stopwatch(result.seconds, CONTENTS_AWAITED):
            for request in pending:   # every content gone before any partition: a rerun finds what failed
                result.seconds[CONTENTS] += request.result()
        with _Stopwatch(result.seconds, PARTITIONS):
            execute_concurrent_with_args(self.cql.session, self.cql.prepared(DELETE_PARTITION),
                                         [(month, owner) for owner in owners], concurrency=STATEMENTS_IN_FLIGHT,
                                         raise_on_first_error=True)
        return result

    def _partitions(self, month: str, owners: Sequence[str],
                    seconds: defaultdict[str, float]) -> Iterator[tuple[str, Any]]:
        """Each owner's partition, the first pages of all read at once (the next ones as they are iterated)."""
        from cassandra.concurrent import execute_concurrent

        select = self.cql.prepared(SELECT_PARTITION)
        statements = []
        for owner in owners:
            bound = select.bind((month, owner))
            bound.fetch_size = PAGE_SIZE
            statements.append((bound, None))
        with _Stopwatch(seconds, READS):
            pages = execute_concurrent(self.cql.session, statements, concurrency=STATEMENTS_IN_FLIGHT,
                                       raise_on_first_error=True, results_generator=False)
        for owner, (_, rows) in zip(owners, pages, strict=True):
            yield owner, rows

    @staticmethod
    def _entries(owner: str, rows: Any, seconds: defaultdict[str, float]) -> Iterator[Entry]:
        """The partition's entries, a page at a time (``rows``: the driver's result of its first page)."""
        while True:
            for row in rows.current_rows:
                yield Entry(owner, row["messageid"], blob_id_of(row["payload"]), row["written"])
            if not rows.has_more_pages:
                return
            with _Stopwatch(seconds, READS):
                rows.fetch_next_page()

    def _flush(self, month: str, entries: Sequence[Entry], seconds: defaultdict[str, float]) -> list[Future[float]]:
        """The entries' contents handed to the S3 pool, their storage rows deleted meanwhile; the S3 request."""
        from cassandra.concurrent import execute_concurrent
        from cassandra.query import BatchStatement, BatchType

        self.limiter.acquire(len(entries))
        keys = [e.blob_id for e in entries if e.blob_id is not None]
        requests = [self.contents.submit(_delete_contents, self.s3, self.target.s3_bucket(month), keys)] if keys else []
        up_to, anyway = self.cql.prepared(DELETE_STORAGE_WRITTEN_UP_TO), self.cql.prepared(DELETE_STORAGE)
        statements = []
        for batch in storage_batches(entries):
            statement = BatchStatement(batch_type=BatchType.UNLOGGED)
            for e in batch:
                if e.written is not None:
                    statement.add(up_to, (e.written, e.owner, e.message_id))
                else:
                    statement.add(anyway, (e.owner, e.message_id))
            statements.append((statement, ()))
        with _Stopwatch(seconds, STORAGE_ROWS):
            execute_concurrent(self.cql.session, statements, concurrency=STATEMENTS_IN_FLIGHT,
                               raise_on_first_error=True)
        return requests


def purge_owner_partitions(target: PurgeTarget, pairs: Sequence[tuple[str, str]]) -> GroupResult:
    """Purge these (month, owner) partitions: ``target.concurrency`` S3 requests in flight, twice as many groups
    being read and deleted (the rest of a group's work overlaps the S3 requests); failures are per owner."""
    cql = target.endpoint.session()
    s3 = use_content_md5(target.s3.client())
    limiter = RateLimiter(target.rate)
    total = GroupResult()
    groups = owner_groups(pairs)
    slots = max(1, target.concurrency)
    with ThreadPoolExecutor(slots, thread_name_prefix="vault-contents") as contents, \
            ThreadPoolExecutor(GROUPS_PER_S3_REQUEST * slots, thread_name_prefix="vault-purge") as pool:
        purge = _GroupPurge(target, cql, s3, limiter, contents)
        futures = {pool.submit(purge.run, month, owners, target.sample_size): (month, owners)
                   for month, owners in groups}
        for future in as_completed(futures):
            month, owners = futures[future]
            try:
                done = future.result()
            except Exception as exc:   # the group's partitions stay: the next run redoes them
                log.warning("owners of %s not purged (%s): %s", month, len(owners), exc)
                total.failures.extend({"bucketname": month, "owner": owner, "error": f"{type(exc).__name__}: {exc}"}
                                      for owner in owners)
                continue
            total.entries.update(done.entries)
            for what, spent in done.seconds.items():
                total.seconds[what] += spent
            total.fixed.extend(done.fixed[: max(0, target.sample_size - len(total.fixed))])
    return total


def purge_slice(target: PurgeTarget, slice_: int, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """One Spark task: a slice's owner partitions, checkpointed here once all are purged."""
    result = purge_owner_partitions(target, pairs)
    deleted = sum(result.entries.values())
    seconds = {what: round(spent, 3) for what, spent in sorted(result.seconds.items())}
    if not result.failures:   # a slice with failures is redone by the next attempt
        Checkpoints(target.endpoint.session(), target.job, target.run_key).mark_done(
            slice_, SliceResult({DELETED_ENTRIES: deleted}, result.fixed, []))
    return {"slice": slice_, "entries": dict(result.entries), "fixed": result.fixed, "failures": result.failures,
            "seconds": seconds}
