"""Restore one user's deleted messages matching James's vault query into the restore mailbox, in Spark.

The same work as WebAdmin's ``POST /deletedMessages/users/{user}?action=restore`` (James's task
``deleted-messages-restore``), for restores too large for one process:

* detection: the user's vault months (``userPerBucket``), their metadata rows for the user
  (``deletedMessageMetadata``, partition reads), the payloads matching the query (James's
  criteria, parsed and evaluated by the server's ``vault.query``; its ``limit`` keeps the first
  entries in bucket then message-id order, as the vault's search does), one item per vault
  message, ``kind`` = its month; entries whose restored copy already exists are left out;
* repair, per entry, on the executors: the copy's message id is derived from the owner and the
  vault message id (``vault.restore_id``): found in the store means restored by an earlier run or
  attempt (skipped); otherwise the content is read from the vault (its S3 month bucket) and
  appended through the server's ``MailboxManager`` into the restore mailbox, with the message's
  delivery date as internal date. Content gone from the vault is skipped, as James does. The
  vault keeps its entries (restoring is not deleting);
* the restore mailbox (``--restore-location``, the server's ``MAILSERVER_VAULT_RESTORE_LOCATION``,
  default ``Restored-Messages``) is created and subscribed on the driver first when missing.

Resumable: slices are checkpointed, and a restored entry is never appended twice (its derived id),
so a killed run started again restores only the rest, and a second run finds nothing to do.
Report: James's ``successfulRestoreCount`` and ``errorRestoreCount``, with the skipped entries
(``skippedAlreadyRestored``, ``skippedContentNotFound``) and the entries matched.

The executors run the server's code: submit it with the whole ``mailserver`` package (the DAG's
``MailQueueSparkJob`` ships it), not the small shared subset of ``spark_apps.packaging``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import (
    COMPLETED,
    FIXED,
    PARTIAL,
    SKIPPED,
    Detection,
    Outcome,
    Procedure,
    run_procedure,
)
from spark_apps.common.settings import JobSettings
from spark_apps.common.vault_restore import RestoreAccess

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("mailplatform.restore_deleted_messages")

TASK_TYPE = "deleted-messages-restore"
RESTORED = "successfulRestoreCount"
ALREADY_RESTORED = "skippedAlreadyRestored"
CONTENT_NOT_FOUND = "skippedContentNotFound"
DEFAULT_LOCATION = "Restored-Messages"
ITEM_COLUMNS = ("kind", "bucketname", "messageid", "deliverydate", "restoredid")


def parse_query(raw: str) -> dict[str, Any]:
    """Pure: the query JSON as James's restore route takes it, checked by the vault's parser; ValueError otherwise."""
    from mailserver.vault.query import Query

    try:
        body = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the query is not JSON: {exc}") from None
    return Query.parse(body).to_json()   # InvalidQuery is a ValueError


def matching_entries(query_json: Mapping[str, Any], owner: str,
                     rows: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, str, str, str, str]]:
    """Pure: the item of each metadata row of ``owner`` whose payload matches the query (``limit`` aside).

    An unreadable payload is logged and skipped, as the server's metadata store does.
    """
    from mailserver.model.address import Username
    from mailserver.vault.model import StoredDeletedMessage, format_zoned
    from mailserver.vault.query import Query
    from mailserver.vault.restore_id import restored_message_id

    query = Query.parse(dict(query_json))
    user = Username.of(owner)
    for row in rows:
        try:
            message = StoredDeletedMessage.from_payload(row["payload"]).message
        except (ValueError, KeyError, TypeError) as exc:
            log.error("unreadable vault metadata %s/%s/%s: %s", row["bucketname"], owner, row["messageid"], exc)
            continue
        if message.owner == user and query.matches(message):
            yield (row["bucketname"], row["bucketname"], str(message.message_id),
                   format_zoned(message.delivery_date), str(restored_message_id(user, message.message_id)))


def not_restored(access: RestoreAccess, rows: Iterable[Any]) -> Iterator[Any]:
    """The items whose restored copy is not in the store, or was left half written by a killed run
    (the repair's ``append_once`` finishes those)."""
    from mailserver.model.ids import MessageId

    manager = access.context().manager
    for row in rows:
        if not manager.stored_once(MessageId.of(row["restoredid"])):
            yield row


def restore_outcome(report: Mapping[str, Any]) -> str:
    """Pure: entries whose content is gone stay to restore (they are skipped, not errors, as in James)."""
    if report["outcome"] == PARTIAL and not report.get("errors") \
            and report.get("unresolved", 0) <= report.get(CONTENT_NOT_FOUND, 0):
        return COMPLETED
    return report["outcome"]


class RestoreDeletedMessages(Procedure):
    job = TASK_TYPE
    slice_columns = ("messageid",)

    def __init__(self) -> None:
        self.owner = ""
        self.query: dict[str, Any] = {}
        self.location = DEFAULT_LOCATION
        self.access: RestoreAccess | None = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("restore")
        g.add_argument("--user", required=True, help="the owner of the deleted messages")
        g.add_argument("--query", default='{"combinator": "and", "criteria": []}',
                       help="James's vault query (JSON, as the WebAdmin restore route takes it) [default: all]")
        g.add_argument("--restore-location",
                       help=f"restore mailbox [MAILSERVER_VAULT_RESTORE_LOCATION, default {DEFAULT_LOCATION}]")
        g.add_argument("--bucket-prefix", help="the server's bucket prefix [S3_BUCKET_PREFIX]")
        g.add_argument("--blob-bucket", help="the server's mail bucket [S3_DEFAULT_BUCKET]")
        g.add_argument("--amqp-url", help="event bus broker [AMQP_URL]; needed unless --dry-run")
        g.add_argument("--bus", default="mailboxEvent", help="event bus name (default mailboxEvent)")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        from mailserver.model.address import Username
        from mailserver.model.mailbox import MailboxPath

        self.owner = Username.of(args.user).value   # InvalidAddress is a ValueError
        self.query = parse_query(args.query)
        self.location = args.restore_location or os.environ.get("MAILSERVER_VAULT_RESTORE_LOCATION", "").strip() \
            or DEFAULT_LOCATION
        MailboxPath.of(Username.of(self.owner), self.location)   # a bad name fails here, before anything runs
        amqp_url = args.amqp_url or os.environ.get("AMQP_URL") or None
        if not amqp_url and not args.dry_run:
            raise ValueError("no broker for the mailbox events: give --amqp-url or set AMQP_URL")
        env = dict(os.environ)
        if args.bucket_prefix is not None:
            env["S3_BUCKET_PREFIX"] = args.bucket_prefix
        if args.blob_bucket:
            env["S3_DEFAULT_BUCKET"] = args.blob_bucket
        if not env.get("S3_ENDPOINT"):
            raise ValueError("S3_ENDPOINT is not set: the vault's contents cannot be read")
        settings = JobSettings.from_args(args)
        self.access = RestoreAccess.of(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace, env,
                                       amqp_url, args.bus)
        return {"username": self.owner, "query": self.query, "restoreLocation": self.location}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        from pyspark.sql import functions as F
        from pyspark.sql.types import StringType, StructField, StructType

        owner, query, access = self.owner, self.query, self.access
        assert access is not None
        buckets = [r["bucketname"] for r in read_table(spark, settings, "userperbucket", ["bucketname", "user"])
                   .filter(F.col("user") == owner).select("bucketname").distinct().collect()]
        rows = (read_table(spark, settings, "deletedmessagemetadata", ["bucketname", "owner", "messageid", "payload"])
                .filter(F.col("bucketname").isin(buckets or [""]) & (F.col("owner") == owner)))
        schema = StructType([StructField(c, StringType(), False) for c in ITEM_COLUMNS])
        matching = spark.createDataFrame(
            rows.rdd.mapPartitions(lambda part: matching_entries(query, owner, (r.asDict() for r in part))), schema)
        if query.get("limit") is not None:   # the vault's search order: month, then message id
            matching = matching.orderBy("bucketname", "messageid").limit(int(query["limit"]))
        matching = matching.dropDuplicates(["messageid"]).cache()   # appended again later: one copy
        to_restore = spark.createDataFrame(matching.rdd.mapPartitions(lambda part: not_restored(access, part)), schema)
        found = matching.count()
        pending = to_restore.count()
        matching.unpersist()
        return Detection(to_restore, {"matchingEntries": found, "alreadyRestoredEntries": found - pending})

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        from mailserver.model.address import Username
        from mailserver.model.ids import MessageId
        from mailserver.model.mailbox import MailboxPath
        from mailserver.vault.api import DeletedMessageContentNotFound
        from mailserver.vault.model import parse_zoned

        assert self.access is not None
        context = self.access.context()
        owner = Username.of(self.owner)
        restored = MessageId.of(item["restoredid"])
        if context.manager.stored_once(restored):
            return Outcome(SKIPPED, item, ALREADY_RESTORED)   # by an earlier attempt, since the detection
        try:
            with context.vault.load(owner, MessageId.of(item["messageid"])) as content:
                # append_once: a copy a killed attempt left half written is finished, not stored twice
                context.manager.append_once(MailboxPath.of(owner, self.location), content, restored,
                                            internal_date=parse_zoned(item["deliverydate"]))
        except DeletedMessageContentNotFound:
            log.info("vault content of %s of %s not found: not restored", item["messageid"], owner)
            return Outcome(SKIPPED, item, CONTENT_NOT_FOUND)
        return Outcome(FIXED, item, RESTORED)

    def before_run(self, dry_run: bool) -> None:
        if not dry_run:
            self.prepare_restore_mailbox()

    def after_run(self, report: dict[str, Any], endpoint: CqlEndpoint, dry_run: bool) -> dict[str, Any]:
        return {**report, "outcome": restore_outcome(report)}   # content-less entries do not fail the run

    def prepare_restore_mailbox(self) -> None:
        """The restore mailbox, created and subscribed when missing (the server's restore does the same)."""
        from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
        from mailserver.model.address import Username
        from mailserver.vault.restore import restore_mailbox

        assert self.access is not None
        context = self.access.context()
        restore_mailbox(context.manager, Username.of(self.owner), self.location,
                        CassandraSubscriptionStore(context.session))

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        counters = result.counters
        return {"username": self.owner, "restoreLocation": self.location, **detection.processed,
                RESTORED: counters.get(RESTORED, 0), "errorRestoreCount": len(result.failures),
                ALREADY_RESTORED: counters.get(ALREADY_RESTORED, 0),
                CONTENT_NOT_FOUND: counters.get(CONTENT_NOT_FOUND, 0)}


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(RestoreDeletedMessages(), argv)


if __name__ == "__main__":
    sys.exit(main())
