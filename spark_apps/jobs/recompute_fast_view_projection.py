"""Recompute the JMAP message fast-view projection (``message_fast_view_projection``).

James's ``RecomputeAllFastViewProjectionItemsTask`` (or ``RecomputeUserFastViewProjectionItemsTask``
with ``--user``). The projection caches, per message id, the ``preview`` and ``hasAttachment``
JMAP shows in lists; ``ComputeMessageFastViewProjectionListener`` writes it on Added events, and
a failed listener leaves no row (reads then compute it, slowly: the guide's "cache miss").

* ``--mode missing`` (default): the messages of the users' ``#private`` mailboxes
  (``imapUidTable``, the truth) that have no projection row (``missingFastViewProjection``);
* ``--mode rebuild-all``: every such message (James's task, which overwrites everything);
  rows that exist are ``existingFastViewProjection``. Verification then looks for missing rows.

Repair, per message id: re-read that the message is still in a mailbox (SERIAL) and, in
``missing`` mode, that no row appeared meanwhile; read ``messageV3`` for the header and body blob
ids; read the header and the first bytes of the body from the mail bucket (James's default
bucket, ``--blob-bucket``); compute preview and hasAttachment with the server's own
``mailserver.mailbox.content.preview`` (shipped in the job's zip); upsert the row. Safe online:
it is a cache rebuild, idempotent, and nothing is deleted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import as_uuid, read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_blobs import S3Access, mail_bucket, read_prefix
from spark_apps.common.mail_users import private_mailboxes, registered_users, users_in_scope
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ALL_TASK = "RecomputeAllFastViewProjectionItemsTask"
USER_TASK = "RecomputeUserFastViewProjectionItemsTask"
MISSING = "missingFastViewProjection"
EXISTING = "existingFastViewProjection"
MODES = ("missing", "rebuild-all")
# James's BucketName.DEFAULT; the server reads its own from S3_DEFAULT_BUCKET (mailserver.blob.s3.S3Config).
DEFAULT_BLOB_BUCKET = "default"


def fast_view_items(messages: DataFrame, mailboxes: DataFrame, projection: DataFrame, *,
                    rebuild_all: bool) -> DataFrame:
    """Pure: (kind, messageid, user) per message of the personal mailboxes to compute.

    ``messages``: imapUidTable (messageid, mailboxid); ``mailboxes``: (user, mailboxid);
    ``projection``: the existing rows (messageid). A message in several mailboxes has one
    projection row, so one item (its ``user`` is one of its owners, for the report).
    """
    from pyspark.sql import functions as F

    owned = (messages.select("messageid", "mailboxid").join(mailboxes, "mailboxid")
             .groupBy("messageid").agg(F.min("user").alias("user")))
    present = projection.select("messageid").distinct().withColumn("present", F.lit(True))
    items = (owned.join(present, "messageid", "left")
             .select(F.when(F.col("present"), F.lit(EXISTING)).otherwise(F.lit(MISSING)).alias("kind"),
                     "messageid", "user"))
    return items if rebuild_all else items.filter(F.col("kind") == MISSING)


def compute_fast_view(prefix: bytes) -> tuple[str, bool]:
    """(preview, hasAttachment): exactly what the server's listener computes."""
    from mailserver.mailbox.content import preview

    return preview(prefix)


class RecomputeFastViewProjection(Procedure):
    job = ALL_TASK      # the report's key stays the same for the user variant (the DAG finds it)
    slice_columns = ("messageid",)

    def __init__(self) -> None:
        self.user: str | None = None
        self.rebuild_all = False
        self.bucket = DEFAULT_BLOB_BUCKET
        self.s3: S3Access | None = None
        self._verifying = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--user", help=f"only this user's messages ({USER_TASK}); default: every user")
        parser.add_argument("--mode", choices=MODES, default="missing",
                            help="missing: only messages without a projection row (default); "
                                 "rebuild-all: recompute every message, as James's task")
        parser.add_argument("--blob-bucket",
                            help="bucket of the message blobs [S3_DEFAULT_BUCKET, else <prefix>default]")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        self.user = args.user.strip().lower() if args.user else None
        self.rebuild_all = args.mode == "rebuild-all"
        self.bucket = mail_bucket(args.blob_bucket, os.environ)
        self.s3 = S3Access.from_env(os.environ)
        options: dict[str, Any] = {"messagesPerSecond": args.rate, "mode": args.mode, "blobBucket": self.bucket}
        if self.user:
            options["username"] = self.user
        return options

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        from pyspark.sql import functions as F

        # After a rebuild, verification asks the question that can be checked: is any row missing?
        rebuild_all, self._verifying = self.rebuild_all and not self._verifying, True
        # Not cached: a stage mixing cached blocks with connector splits waits forever on locality in
        # local mode (the splits prefer the Cassandra host); the table is small, reading it twice is cheap.
        mailboxes = private_mailboxes(spark, settings, self.user)
        users = users_in_scope(registered_users(spark, settings), mailboxes, self.user)
        messages = read_table(spark, settings, "imapuidtable", ["messageid", "mailboxid"])
        if self.user is not None:
            messages = messages.filter(F.col("mailboxid").isin([r["mailboxid"] for r in mailboxes.collect()]))
        projection = read_table(spark, settings, "message_fast_view_projection", ["messageid"])
        every = fast_view_items(messages, mailboxes, projection, rebuild_all=True).cache()
        items = every if rebuild_all else every.filter(F.col("kind") == MISSING)
        return Detection(items, {"scannedUserCount": users.count(), "scannedMessageCount": every.count()})

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        failed_users = {f.get("user") for f in result.failures}
        fields: dict[str, Any] = {
            "type": USER_TASK if self.user else ALL_TASK,
            "processedMessageCount": result.counters.get("processedMessageCount", 0),
            "failedMessageCount": len(result.failures),
            **{k: v for k, v in result.counters.items() if k != "processedMessageCount"},
        }
        if self.user:
            return {**fields, "username": self.user}
        return {**fields, "processedUserCount": detection.processed["scannedUserCount"] - len(failed_users),
                "failedUserCount": len(failed_users)}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        from mailserver.mailbox.content import PREVIEW_SCAN_BYTES

        cql = endpoint.session()
        message_id = as_uuid(item["messageid"])
        if not cql.serial_read("SELECT mailboxid FROM imapuidtable WHERE messageid = ? LIMIT 1", (message_id,)):
            return Outcome(SKIPPED, item)   # expunged meanwhile: its cache row must not come back
        if item["kind"] == MISSING and cql.execute(
                "SELECT messageid FROM message_fast_view_projection WHERE messageid = ?", (message_id,)):
            return Outcome(SKIPPED, item)   # a read or a listener retry computed it meanwhile
        content = cql.execute("SELECT headercontent, bodycontent FROM messagev3 WHERE messageid = ?", (message_id,))
        if not content or not content[0]["headercontent"] or not content[0]["bodycontent"]:
            raise ValueError("no messageV3 row with blob ids: the content cannot be read")
        assert self.s3 is not None
        prefix = read_prefix(self.s3.reader(), self.bucket, content[0]["headercontent"], content[0]["bodycontent"],
                             PREVIEW_SCAN_BYTES)
        preview, has_attachment = compute_fast_view(prefix)
        cql.execute("INSERT INTO message_fast_view_projection (messageid, preview, hasattachment) VALUES (?, ?, ?)",
                    (message_id, preview, has_attachment))
        return Outcome(FIXED, item, "processedMessageCount")


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(RecomputeFastViewProjection(), argv)


if __name__ == "__main__":
    sys.exit(main())
