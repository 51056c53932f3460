"""Purge the deleted-messages vault: every entry of the months older than the retention period.

The vault keeps one bucket per month (``deleted-messages-YYYY-MM-01``, James's naming); a month
expires when it ended before ``beginningOfRetentionPeriod`` = now - retention (fixed once per run,
or given). James drops each expired month at once (S3 bucket first, then its metadata); this job
does the same work entry by entry so that it can be checkpointed, throttled and resumed:

* detection: the ``deletedMessageMetadata`` rows of the expired buckets (connector scan), one item
  per entry, ``kind`` = its bucket (the report counts the entries per month);
* repair, per entry, on the executors: the metadata row is read again (gone: skipped); the
  content object is deleted (``storageInformation`` says where; an entry appended again in a
  later month keeps its newer content and location), then ``storageInformation``, then the
  ``deletedMessageMetadata`` row: content first, metadata last, so nothing ever points to a blob
  that is gone without the next run finishing the work. Those are synchronous round trips, so each
  partition keeps ``--concurrency`` entries in flight (8 by default; 1 = one at a time): ``repair``
  holds no state of its own, the worker process's CQL session (a cassandra-driver ``Session``) and
  boto3 client that the threads share are thread-safe, and ``--rate`` still bounds the whole job;
* finishing, on the driver: each expired month without metadata rows left loses what is left of
  its S3 bucket and its ``userPerBucket`` partition (the month's listing, written first by the
  server and deleted last here); verification is detection again.

Resumable: deleted entries are gone and finished slices are checkpointed, so a killed run started
again (same run key) does only the rest, and a second run finds nothing. Report: James's
``deleted-messages-blob-store-based-garbage-collection`` (``beginningOfRetentionPeriod``,
``deletedBuckets``) plus ``deletedEntries``, ``expiredBuckets`` and the entries found per month.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from mailserver.vault.buckets import is_expired
from mailserver.vault.config import ONE_YEAR, parse_retention
from spark_apps.common.cassandra_tables import read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_blobs import S3Access
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, ProcedureRunner, RunOptions
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("mailplatform.purge_deleted_messages_vault")

TASK_TYPE = "deleted-messages-blob-store-based-garbage-collection"
DELETED_ENTRIES = "deletedEntries"
SELECT_ENTRY = "SELECT messageid FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ? AND messageId = ?"
SELECT_STORAGE = "SELECT bucketName, blobId FROM storageInformation WHERE owner = ? AND messageId = ?"
DELETE_STORAGE = "DELETE FROM storageInformation WHERE owner = ? AND messageId = ?"
DELETE_ENTRY = "DELETE FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ? AND messageId = ?"
BUCKET_USERS = "SELECT user FROM userPerBucket WHERE bucketName = ?"
ANY_ENTRY = "SELECT messageId FROM deletedMessageMetadata WHERE bucketName = ? AND owner = ? LIMIT 1"
DELETE_BUCKET_USERS = "DELETE FROM userPerBucket WHERE bucketName = ?"
DEFAULT_CONCURRENCY = 8
MAX_CONCURRENCY = 64


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


class PurgeDeletedMessagesVault(Procedure):
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
                       help=f"entries deleted at once by each Spark partition (1 to {MAX_CONCURRENCY}, "
                            f"default {DEFAULT_CONCURRENCY}; --rate still bounds the whole job)")

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
        cql = endpoint.session()
        bucket, owner, message_id = item["bucketname"], item["owner"], item["messageid"]
        if not cql.execute(SELECT_ENTRY, (bucket, owner, message_id)):
            return Outcome(SKIPPED, item)   # purged since the detection (an earlier attempt, James's task)
        storage = cql.execute(SELECT_STORAGE, (owner, message_id))
        if storage and storage[0]["bucketname"] == bucket:   # else: appended again later, its newer copy stays
            self._delete_object(bucket, storage[0]["blobid"])
            cql.execute(DELETE_STORAGE, (owner, message_id))
        cql.execute(DELETE_ENTRY, (bucket, owner, message_id))
        return Outcome(FIXED, item, DELETED_ENTRIES)

    def _delete_object(self, bucket: str, blob_id: str) -> None:
        from botocore.exceptions import ClientError

        assert self.s3 is not None
        try:
            self.s3.client().delete_object(Bucket=s3_bucket(self.bucket_prefix, bucket), Key=blob_id)
        except ClientError as exc:   # the month's bucket is already gone: so is the content
            if exc.response.get("Error", {}).get("Code") != "NoSuchBucket":
                raise

    def finish(self, endpoint: CqlEndpoint) -> list[str]:
        """Drop the S3 bucket and the ``userPerBucket`` partition of each expired month left without entries."""
        from botocore.exceptions import ClientError

        cql = endpoint.session()
        assert self.s3 is not None
        client = self.s3.client()
        dropped = []
        for bucket in self.expired_buckets:
            users = [r["user"] for r in cql.execute(BUCKET_USERS, (bucket,))]
            if any(cql.execute(ANY_ENTRY, (bucket, user)) for user in users):
                log.warning("%s still has entries (a failed item): kept for the next run", bucket)
                continue
            name = s3_bucket(self.bucket_prefix, bucket)
            try:
                for page in client.get_paginator("list_objects_v2").paginate(Bucket=name):
                    for obj in page.get("Contents", []):   # content orphaned by an interrupted append
                        client.delete_object(Bucket=name, Key=obj["Key"])
                client.delete_bucket(Bucket=name)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") != "NoSuchBucket":
                    raise
            cql.execute(DELETE_BUCKET_USERS, (bucket,))
            dropped.append(bucket)
        return dropped

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        assert self.beginning is not None
        return {"beginningOfRetentionPeriod": self.beginning.isoformat(),
                "deletedBuckets": [], **detection.processed, **result.counters}


class PurgeRunner(ProcedureRunner):
    """The shared anatomy, plus the months dropped once their entries are gone."""

    def run(self, spark: SparkSession, settings: JobSettings, endpoint: CqlEndpoint, options: RunOptions,
            running_options: dict[str, Any]) -> dict[str, Any]:
        report = super().run(spark, settings, endpoint, options, running_options)
        procedure = self.procedure
        assert isinstance(procedure, PurgeDeletedMessagesVault)
        if options.dry_run:
            report["deletedBuckets"] = []
            report["wouldDeleteBuckets"] = procedure.expired_buckets
            return report
        report["deletedBuckets"] = procedure.finish(endpoint)
        kept = sorted(set(procedure.expired_buckets) - set(report["deletedBuckets"]))
        if kept:
            report["keptBuckets"] = kept
            report["outcome"] = "PARTIAL"
        return report


def main(argv: Sequence[str] | None = None) -> int:
    return PurgeRunner(PurgeDeletedMessagesVault()).main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
