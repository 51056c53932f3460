"""Purge the deleted-messages vault: every entry of the months older than the retention period.

The vault keeps one bucket per month (``deleted-messages-YYYY-MM-01``, James's naming); a month
expires when it ended before ``beginningOfRetentionPeriod`` = now - retention (fixed by the first
attempt of a run and kept by its retries, as James fixes it when the task is created). As James's
task, the job drops each expired month whole, in bulk, content before metadata:

* the expired months and their owners come from ``userPerBucket`` (small: a row per owner and
  month); each (month, owner) is an owner partition of ``deletedMessageMetadata``, hashed into
  one of ``--slices`` checkpointed slices, one Spark task each;
* on the executors (spark_apps/common/vault_purge.py), owner partitions are read and purged by
  groups, ``--concurrency`` S3 requests and twice as many groups in flight per task: content
  objects by S3 ``DeleteObjects`` (1,000 keys a request, the blob ids are in the payloads) while
  the ``storageInformation`` rows go (per entry, as in James, in unlogged batches), then, both
  done, each owner partition with one delete;
* on the driver, each month whose owners are all done loses what is left in its S3 bucket
  (objects no entry names, from an interrupted append: listed and deleted in batches) and the
  bucket itself, then its ``userPerBucket`` partition, James's listing of the month, last;
* verification: ``userPerBucket`` is listed again; an expired month still there is counted.

James deletes the month's bucket before its metadata: the bucket is listed to find its objects,
and S3Proxy's filesystem store lists a directory of tens of thousands of objects at about
three objects a second; the job therefore deletes the objects the entries name first, with
their metadata, and lists only what remains. ``--rate`` bounds the entries purged per second
(content, storage row and metadata) across the whole job.

Resumable: a killed run started again with the same run key skips its checkpointed slices, reads
again the owner partitions of the others (the purged ones are empty) and finishes the months; a
second run finds nothing. The dry run reads the expired entries (connector scan) and writes
nothing. Report: James's ``deleted-messages-blob-store-based-garbage-collection``
(``beginningOfRetentionPeriod``, ``deletedBuckets``) plus ``deletedEntries``, ``expiredBuckets``,
``deletedOrphanObjects``, the entries found per month and, for operators, the executors'
thread-seconds per kind of request (``executorSeconds``: partition reads, content deletes,
storage deletes, partition deletes, and the groups' wait for their contents).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from mailserver.vault.buckets import is_expired
from mailserver.vault.config import ONE_YEAR, parse_retention
from spark_apps.common.bookkeeping import Checkpoints, SliceResult
from spark_apps.common.cassandra_tables import read_table
from spark_apps.common.cql import CqlEndpoint, CqlSession
from spark_apps.common.mail_blobs import S3Access
from spark_apps.common.procedure import COMPLETED, PARTIAL, Detection, Outcome, Procedure, ProcedureRunner, RunOptions
from spark_apps.common.s3_bulk import drop_bucket, use_content_md5
from spark_apps.common.settings import JobSettings
from spark_apps.common.throttle import RateLimiter, share
from spark_apps.common.vault_purge import DELETED_ENTRIES, PurgeTarget, purge_slice, slice_of

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("mailplatform.purge_deleted_messages_vault")

TASK_TYPE = "deleted-messages-blob-store-based-garbage-collection"
RUN_STATE = TASK_TYPE + ":run"   # checkpoints' job of the run-wide state (its beginning), apart from the slices
BEGINNING_MICROS = "beginningOfRetentionMicros"
ORPHANS = "deletedOrphanObjects"
LIST_MONTHS = "SELECT DISTINCT bucketName FROM userPerBucket"
MONTH_OWNERS = "SELECT user FROM userPerBucket WHERE bucketName = ?"
PARTITION_ENTRIES = "SELECT messageId FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ?"
DELETE_MONTH = "DELETE FROM userPerBucket WHERE bucketName = ?"
DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 64
MONTHS_AT_ONCE = 8   # months whose buckets and listings are dropped at once (James: 16)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def beginning_of_retention(now: datetime, retention: str | None, given: str | None) -> datetime:
    """Pure: the given instant (ISO-8601 with offset) or ``now - retention`` (James's durations, days by default)."""
    if given:
        value = datetime.fromisoformat(given.replace("Z", "+00:00"))
        if value.tzinfo is None:
            raise ValueError(f"--beginning-of-retention {given!r} needs an offset (e.g. Z)")
        return value.astimezone(UTC)
    return now - (parse_retention(retention) if retention else ONE_YEAR)


def expired(buckets: Iterable[str], beginning: datetime) -> list[str]:
    """Pure: the vault months that ended before ``beginning`` (other names are kept)."""
    return sorted(b for b in set(buckets) if is_expired(b, beginning))


def s3_bucket(prefix: str, bucket: str) -> str:
    """The S3 bucket of a vault bucket: the server's ``S3_BUCKET_PREFIX`` then the name (James's resolver)."""
    return prefix + bucket


def to_micros(instant: datetime) -> int:
    """Pure: an instant as whole microseconds since the epoch (exact, unlike a float timestamp)."""
    return (instant - EPOCH) // timedelta(microseconds=1)


def from_micros(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def slice_work(pairs: Iterable[tuple[str, str]], slices: int, done: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
    """Pure: the (month, owner) pairs of every slice not done yet (an empty list for a slice without any)."""
    work: dict[int, list[tuple[str, str]]] = {s: [] for s in range(slices) if s not in set(done)}
    for month, owner in pairs:
        slice_ = slice_of(month, owner, slices)
        if slice_ in work:
            work[slice_].append((month, owner))
    return work


class PhaseClock:
    """Seconds spent in each phase of a run, for the report (where the time of a slow purge went)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.monotonic()

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.seconds[phase] = round(now - self._last, 3)
        self._last = now


class PurgeDeletedMessagesVault(Procedure):
    """The job's options and the dry run's detection; the purge itself is ``MonthPurgeRunner``'s."""

    job = TASK_TYPE
    slice_columns = ("bucketname", "owner", "messageid")

    def __init__(self) -> None:
        self.beginning: datetime | None = None
        self.bucket_prefix = ""
        self.s3: S3Access | None = None
        self.expired_buckets: list[str] = []
        self.concurrency = DEFAULT_CONCURRENCY

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("vault")
        g.add_argument("--retention", help="retention period, e.g. 1y, 365d, 30 (days) [default 1y]")
        g.add_argument("--beginning-of-retention",
                       help="ISO-8601 instant: purge the months that ended before it (instead of now - retention)")
        g.add_argument("--bucket-prefix", help="the server's bucket prefix [S3_BUCKET_PREFIX]")
        g.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                       help=f"S3 DeleteObjects requests in flight per Spark task, with twice as many groups of owner "
                            f"partitions being read and deleted (1 to {MAX_CONCURRENCY}, default "
                            f"{DEFAULT_CONCURRENCY}; --rate still bounds the whole job)")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        concurrency = getattr(args, "concurrency", DEFAULT_CONCURRENCY)
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}")
        self.concurrency = concurrency
        self.beginning = beginning_of_retention(datetime.now(UTC), args.retention, args.beginning_of_retention)
        self.bucket_prefix = args.bucket_prefix if args.bucket_prefix is not None else \
            os.environ.get("S3_BUCKET_PREFIX", "")
        self.s3 = S3Access.from_env(os.environ)
        return {"beginningOfRetentionPeriod": self.beginning.isoformat(), "bucketPrefix": self.bucket_prefix,
                "concurrency": self.concurrency}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        """The dry run's view: every entry of the expired months (connector scans, nothing written)."""
        from pyspark.sql import functions as F

        assert self.beginning is not None
        listed = [r["bucketname"] for r in read_table(spark, settings, "userperbucket", ["bucketname"])
                  .distinct().collect()]
        self.expired_buckets = expired(listed, self.beginning)
        metadata = read_table(spark, settings, "deletedmessagemetadata", ["bucketname", "owner", "messageid"])
        items = (metadata.filter(F.col("bucketname").isin(self.expired_buckets or [""]))
                 .select(F.col("bucketname").alias("kind"), "bucketname", "owner", "messageid"))
        return Detection(items, {"expiredBuckets": len(self.expired_buckets)})

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        raise NotImplementedError("the vault is purged a month at a time (MonthPurgeRunner), not entry by entry")

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        assert self.beginning is not None
        return {"beginningOfRetentionPeriod": self.beginning.isoformat(),
                "deletedBuckets": [], **detection.processed, **result.counters}


class MonthPurgeRunner(ProcedureRunner):
    """The shared audit, report and exit status; the dry run is the shared detection; the purge is by month."""

    procedure: PurgeDeletedMessagesVault

    def run(self, spark: SparkSession, settings: JobSettings, endpoint: CqlEndpoint, options: RunOptions,
            running_options: dict[str, Any]) -> dict[str, Any]:
        if options.dry_run:
            report = super().run(spark, settings, endpoint, options, running_options)
            report["deletedBuckets"] = []
            report["wouldDeleteBuckets"] = self.procedure.expired_buckets
            return report
        return self.purge(spark, endpoint, options, running_options)

    def pinned_beginning(self, cql: CqlSession, run_key: str) -> datetime:
        """The beginning of the run's first attempt (a retry keeps it), recorded by that attempt."""
        assert self.procedure.beginning is not None
        state = Checkpoints(cql, RUN_STATE, run_key)
        recorded = state.done().get(0)
        if recorded is not None and BEGINNING_MICROS in recorded.counters:
            return from_micros(recorded.counters[BEGINNING_MICROS])
        state.mark_done(0, SliceResult({BEGINNING_MICROS: to_micros(self.procedure.beginning)}))
        return self.procedure.beginning

    def purge(self, spark: SparkSession, endpoint: CqlEndpoint, options: RunOptions,
              running_options: dict[str, Any]) -> dict[str, Any]:
        procedure = self.procedure
        assert procedure.s3 is not None
        started = time.monotonic()
        phases = PhaseClock()
        cql = endpoint.session()
        beginning = self.pinned_beginning(cql, options.run_key)
        months = expired((r["bucketname"] for r in cql.execute(LIST_MONTHS)), beginning)
        pairs = [(month, r["user"]) for month in months for r in cql.execute(MONTH_OWNERS, (month,))]
        checkpoints = Checkpoints(cql, procedure.job, options.run_key)
        already = checkpoints.done()
        work = slice_work(pairs, options.slices, already)
        busy = sorted((s, p) for s, p in work.items() if p)   # a slice without pairs has nothing to checkpoint
        phases.lap("months and owners listed")
        parallel = max(1, min(spark.sparkContext.defaultParallelism, len(busy)))
        target = PurgeTarget(endpoint, procedure.s3, procedure.bucket_prefix, procedure.job, options.run_key,
                             procedure.concurrency, share(options.rate, parallel), options.sample_size)
        results = (spark.sparkContext.parallelize(busy, len(busy))
                   .map(lambda slice_pairs: purge_slice(target, *slice_pairs)).collect()) if busy else []
        phases.lap("owner partitions purged")

        found: Counter[str] = Counter()
        executor_seconds: Counter[str] = Counter()
        fixed: list[dict[str, Any]] = []
        failures: list[dict[str, Any]] = []
        deleted = sum(r.counters.get(DELETED_ENTRIES, 0) for r in already.values())
        for previous in already.values():
            fixed.extend(previous.fixed[: max(0, options.sample_size - len(fixed))])
        for result in sorted(results, key=lambda r: r["slice"]):
            found.update(result["entries"])
            executor_seconds.update(result.get("seconds", {}))
            fixed.extend(result["fixed"][: max(0, options.sample_size - len(fixed))])
            failures.extend(result["failures"])
            log.info("slice %d/%d purged: %d entries, %d failed owner partitions", result["slice"] + 1,
                     options.slices, sum(result["entries"].values()), len(result["failures"]))
        deleted += sum(found.values())

        dropped, orphans = self.drop_months(cql, [m for m in months if m not in {f["bucketname"] for f in failures}],
                                            options.rate, failures)
        phases.lap("months dropped")
        remaining = self.entries_left(cql, expired((r["bucketname"] for r in cql.execute(LIST_MONTHS)), beginning))
        phases.lap("verified")
        unresolved = sum(n for m, n in remaining.items() if m in months)
        kept = sorted(set(months) - set(dropped))
        report = {
            "type": procedure.job, "timestamp": datetime.now(UTC).isoformat(), "runKey": options.run_key,
            "dryRun": False, "runningOptions": {**running_options, "beginningOfRetentionPeriod": beginning.isoformat()},
            "detected": dict(sorted(found.items())), "beginningOfRetentionPeriod": beginning.isoformat(),
            "expiredBuckets": len(months), "deletedBuckets": dropped, DELETED_ENTRIES: deleted, ORPHANS: orphans,
            "fixedInconsistencies": fixed, "errors": failures, "remaining": remaining, "unresolved": unresolved,
            "unresolvedItems": [], "newSinceDetection": sum(remaining.values()) - unresolved,
            "slices": {"total": options.slices, "repaired": sorted(work), "skippedAlreadyDone": sorted(already)},
            "outcome": COMPLETED if not failures and not unresolved and not kept else PARTIAL,
            "phaseSeconds": phases.seconds,
            "executorSeconds": {what: round(spent, 1) for what, spent in sorted(executor_seconds.items())},
            "durationSeconds": round(time.monotonic() - started, 3)}
        if kept:
            report["keptBuckets"] = kept
        return report

    def drop_months(self, cql: CqlSession, months: Sequence[str], rate: float | None,
                    failures: list[dict[str, Any]]) -> tuple[list[str], int]:
        """Each month whose owner partitions are all purged: what is left of its bucket, the bucket, then its
        ``userPerBucket`` partition. A month that fails is kept (and its failure reported) for the next run."""
        assert self.procedure.s3 is not None
        client = use_content_md5(self.procedure.s3.client())
        limiter = RateLimiter(rate)

        def drop(month: str) -> int:
            left = drop_bucket(client, s3_bucket(self.procedure.bucket_prefix, month), limiter)
            cql.execute(DELETE_MONTH, (month,))
            return left

        dropped: list[str] = []
        orphans = 0
        with ThreadPoolExecutor(MONTHS_AT_ONCE, thread_name_prefix="vault-months") as pool:
            for month, future in [(month, pool.submit(drop, month)) for month in months]:
                try:
                    orphans += future.result()
                except Exception as exc:
                    log.warning("%s kept for the next run: %s", month, exc)
                    failures.append({"bucketname": month, "error": f"{type(exc).__name__}: {exc}"})
                    continue
                dropped.append(month)
        return dropped, orphans

    @staticmethod
    def entries_left(cql: CqlSession, months: Sequence[str]) -> dict[str, int]:
        """Verification: the entries still in these months (normally none: only failed months are still listed)."""
        left: dict[str, int] = {}
        for month in months:
            count = sum(len(cql.execute(PARTITION_ENTRIES, (month, r["user"])))
                        for r in cql.execute(MONTH_OWNERS, (month,)))
            left[month] = count
        return {m: n for m, n in left.items() if n}


def main(argv: Sequence[str] | None = None) -> int:
    return MonthPurgeRunner(PurgeDeletedMessagesVault()).main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
