"""Recover lost mails: republish what the browse view holds but the broker lost, re-enqueue whole mails
whose content blobs nothing references, and move the browse start. Nothing is deleted.

1. **Republish** (James's ``RepublishNotProcessedMails``): the live entries of the browse view enqueued
   before ``now - --older-than`` whose enqueueId is in none of the queue's RabbitMQ queues (work queue and
   delay queues, read without acknowledging: every message goes back) are published again under the
   same enqueueId, through ``DistributedMailQueue.republish_entry`` (a delayed mail for the rest of its
   delay). ``--no-broker-check`` republishes every such entry, as James does (a mail still in the broker
   is then queued twice: delivered twice unless its first copy was processed before the second arrives).
   Mails being processed at that moment are not in the broker either: a threshold above the longest
   processing time keeps them out.
2. **Orphan content** (the seed's restore folders): the blobs of the mail bucket that no queue row (live
   or deleted), repository mail, mailbox message or attachment references, written inside the window
   (after every queue's ``contentStart``, since older rows may have been cleaned up, within
   ``--orphan-max-age``, and at least ``--orphan-min-age`` ago, so enqueues in flight are left alone).
   The whole mails among them (``spark_apps.common.orphans``: paired header and body, received by this
   server's SMTP intake inside the window, with a recipient) are enqueued on ``--target-queue`` under an
   enqueueId derived from their blobs (a retried run's second copy is skipped at dequeue); the others
   are reported with the reason.
3. **Browse start** (James's ``updateBrowseStart``): each queue's browse start moves to the slice of its
   oldest live mail (never into the last slice window), and the slices before it are cleaned up.

Verification: detection again; a mail republished by this run and not seen in the broker is counted
``inFlight`` (a consumer holds it), not unresolved. Each step is reported with counts and sample ids.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from spark_apps.common.bookkeeping import SliceResult
from spark_apps.common.cassandra_tables import as_uuid, read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_blobs import S3Access
from spark_apps.common.mail_queues import (
    BrokerSnapshot,
    QueueAccess,
    browse_starts,
    content_starts,
    epoch_ms,
    from_epoch_ms,
    job_duration,
    now_utc,
    read_live_view,
    snapshot_enqueue_ids,
    validate_queue_name,
)
from spark_apps.common.orphans import BLOB_ID_ALPHABET, HEADER_SCAN_LIMIT, BlobFeatures, features_of, pair
from spark_apps.common.procedure import FAILED, FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

NOT_IN_BROKER = "notInBroker"
ORPHAN = "orphanMail"
REPUBLISHED, RECOVERED = "republishedMails", "recoveredMails"
ITEM_SCHEMA = ("kind string, itemkey string, queuename string, enqueueid string, timerangestart_ms long, "
               "bucketid int, name string, headerblobid string, bodyblobid string, size long, sender string, "
               "recipients array<string>, evidence string")
REFERENCES = {"enqueuedmailsv4": ("headerblobid", "bodyblobid"),
              "mailrepositorycontentv2": ("headerblobid", "bodyblobid"),
              "messagev3": ("headercontent", "bodycontent"),
              "attachmentv2": ("blobid",)}
SAMPLE = 20


def not_in_broker(live: DataFrame, broker_ids: DataFrame, cutoff_ms: int) -> DataFrame:
    """Pure: live entries enqueued before ``cutoff_ms`` whose enqueueId the broker does not hold."""
    from pyspark.sql import functions as F

    old = live.filter(F.col("enqueuedtime_ms") < F.lit(cutoff_ms)).withColumn("enqueueid",
                                                                              F.col("enqueueid").cast("string"))
    missing = old.join(broker_ids.select("enqueueid"), "enqueueid", "left_anti")
    return missing.select(F.lit(NOT_IN_BROKER).alias("kind"), F.col("enqueueid").alias("itemkey"), "queuename",
                          "enqueueid", "timerangestart_ms", "bucketid", "name",
                          F.lit(None).cast("string").alias("headerblobid"),
                          F.lit(None).cast("string").alias("bodyblobid"), F.lit(None).cast("long").alias("size"),
                          "sender", "recipients", F.lit(None).cast("string").alias("evidence"))


def referenced_blob_ids(tables: dict[str, DataFrame]) -> DataFrame:
    """Pure: every blob id the given tables reference (one ``blob_id`` column, distinct)."""
    from pyspark.sql import functions as F

    parts = [df.select(F.col(c).alias("blob_id")) for table, df in tables.items() for c in REFERENCES[table]]
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    return union.filter(F.col("blob_id").isNotNull()).distinct()


def unreferenced(blobs: DataFrame, referenced: DataFrame, since_ms: int, until_ms: int) -> DataFrame:
    """Pure: the listed blobs (blob_id, size, modified_ms) written in [since, until] that nothing references."""
    from pyspark.sql import functions as F

    window = blobs.filter((F.col("modified_ms") >= F.lit(since_ms)) & (F.col("modified_ms") <= F.lit(until_ms)))
    return window.join(referenced, "blob_id", "left_anti")


def _list_prefix(s3: S3Access, bucket: str, prefixes: Iterable[str]) -> Iterator[tuple[str, int, int]]:
    client = s3.client()
    paginator = client.get_paginator("list_objects_v2")
    for prefix in prefixes:
        for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                yield obj["Key"], int(obj["Size"]), int(obj["LastModified"].timestamp() * 1000)


def _features(s3: S3Access, bucket: str, rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    client = s3.client()
    for row in rows:
        size = int(row["size"])
        if size <= HEADER_SCAN_LIMIT:
            data = client.get_object(Bucket=bucket, Key=row["blob_id"])["Body"].read()
        else:
            body = client.get_object(Bucket=bucket, Key=row["blob_id"], Range="bytes=0-65535")["Body"]
            data = body.read()
        yield features_of(row["blob_id"], data, size, int(row["modified_ms"])).as_row()


class RecoverLostMails(Procedure):
    job = "recover-lost-mails"
    slice_columns = ("itemkey",)

    def __init__(self) -> None:
        self.queues: list[str] | None = None
        self.older_than = timedelta(hours=1)
        self.check_broker = True
        self.scan_orphans = True
        self.orphan_min_age = timedelta(minutes=15)
        self.orphan_max_age = timedelta(days=7)
        self.target_queue = "spool"
        self.signature = "JAMES SMTP Server"
        self.window_ms = 2000
        self.move_browse_start = True
        self.access: QueueAccess | None = None
        self.s3: S3Access | None = None
        self.republished: set[str] = set()          # driver side: what this run republished
        self.passes: list[dict[str, Any]] = []       # what each detection saw

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("recovery")
        g.add_argument("--queue", action="append", help="a mail queue (repeatable; default: every queue)")
        g.add_argument("--older-than", default="1h", help="republish only mails enqueued longer ago (default 1h)")
        g.add_argument("--no-broker-check", action="store_true",
                       help="republish every such mail without reading the broker (James's behaviour)")
        g.add_argument("--no-orphans", action="store_true", help="skip the orphan content scan")
        g.add_argument("--orphan-min-age", default="15m", help="leave blobs younger than this (default 15m)")
        g.add_argument("--orphan-max-age", default="7d", help="look at blobs younger than this (default 7d)")
        g.add_argument("--target-queue", default="spool", help="where recovered mails go (default spool)")
        g.add_argument("--intake-signature", default="JAMES SMTP Server",
                       help="what this server's SMTP intake writes in Received (its software name)")
        g.add_argument("--pairing-window-ms", type=int, default=2000,
                       help="header and body of one mail are written within this time (default 2000)")
        g.add_argument("--no-browse-start", action="store_true", help="do not move the browse starts")
        g.add_argument("--amqp-url", help="the broker of the mail queues [AMQP_URL]")
        g.add_argument("--management-url", help="RabbitMQ management API [RABBITMQ_MANAGEMENT_URL]")
        g.add_argument("--blob-bucket", help="bucket of the mail blobs [S3_DEFAULT_BUCKET, else <prefix>default]")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        self.queues = [validate_queue_name(q) for q in args.queue] if args.queue else None
        self.older_than = job_duration(args.older_than)
        self.check_broker = not args.no_broker_check
        self.scan_orphans = not args.no_orphans
        self.orphan_min_age = job_duration(args.orphan_min_age)
        self.orphan_max_age = job_duration(args.orphan_max_age)
        self.target_queue = validate_queue_name(args.target_queue)
        self.signature = args.intake_signature
        if args.pairing_window_ms < 0:
            raise ValueError("--pairing-window-ms must be >= 0")
        self.window_ms = args.pairing_window_ms
        self.move_browse_start = not args.no_browse_start
        settings = JobSettings.from_args(args)
        self.access = QueueAccess.from_env(settings, os.environ, amqp_url=args.amqp_url,
                                           management_url=args.management_url, blob_bucket=args.blob_bucket)
        if self.check_broker and not self.access.management_url:
            raise ValueError("the broker check lists the delay queues through the management API: give "
                             "--management-url (or RABBITMQ_MANAGEMENT_URL), or --no-broker-check")
        if self.scan_orphans:
            self.s3 = S3Access.from_env(os.environ)
        return {"queues": self.queues, "olderThan": f"{int(self.older_than.total_seconds())}s",
                "checkBroker": self.check_broker, "scanOrphans": self.scan_orphans,
                "orphanMinAge": f"{int(self.orphan_min_age.total_seconds())}s",
                "orphanMaxAge": f"{int(self.orphan_max_age.total_seconds())}s", "targetQueue": self.target_queue,
                "intakeSignature": self.signature, "moveBrowseStart": self.move_browse_start}

    # ------------------------------------------------------------------ detection
    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        cql = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace).session()
        now_ms = epoch_ms(now_utc())
        seen: dict[str, Any] = {}
        starts = browse_starts(cql, self.queues)
        missing = sorted(set(self.queues or []) - set(starts))
        if missing:
            raise ValueError(f"no browse start for mail queue(s) {missing}: never initialised")
        items = [self._not_in_broker(spark, settings, starts, now_ms, seen)]
        if self.scan_orphans:
            items.append(self._orphans(spark, settings, cql, now_ms, seen))
        all_items = items[0] if len(items) == 1 else items[0].unionByName(items[1])
        self.passes.append(seen)
        first = self.passes[0]
        return Detection(all_items.localCheckpoint(), {k: v for k, v in first.items() if isinstance(v, int)})

    def _not_in_broker(self, spark: SparkSession, settings: JobSettings, starts: dict[str, int], now_ms: int,
                       seen: dict[str, Any]) -> DataFrame:
        from pyspark.sql import functions as F

        assert self.access is not None
        live = read_live_view(spark, settings, starts) if starts else spark.createDataFrame(
            [], "queuename string, enqueueid string, enqueuedtime_ms long, timerangestart_ms long, bucketid int, "
                "name string, sender string, recipients array<string>")
        snapshot = self._snapshot(list(starts)) if self.check_broker else BrokerSnapshot()
        ids = set(snapshot.ids) | self.republished
        broker = spark.createDataFrame([(i,) for i in sorted(ids)], "enqueueid string")
        cutoff = now_ms - int(self.older_than.total_seconds() * 1000)
        items = not_in_broker(live, broker, cutoff).localCheckpoint()
        in_flight = 0
        if self.republished:
            in_flight = (live.withColumn("enqueueid", F.col("enqueueid").cast("string"))
                         .filter(F.col("enqueueid").isin(sorted(self.republished)))
                         .join(spark.createDataFrame([(i,) for i in sorted(snapshot.ids)], "enqueueid string"),
                               "enqueueid", "left_anti").count())
        seen.update({"liveMailsInView": live.count(), "brokerMessagesRead": sum(snapshot.messages.values()),
                     "brokerMessagesUnreadable": snapshot.unreadable,
                     "brokerMessagesHeldByConsumers": sum(snapshot.unacknowledged.values()),
                     "notInBroker": items.count(), "inFlight": in_flight,
                     "notInBrokerSample": [r["enqueueid"] for r in items.select("enqueueid").limit(SAMPLE).collect()],
                     "browseStarts": {q: from_epoch_ms(ms).isoformat() for q, ms in starts.items()}})
        return items

    def _snapshot(self, queues: list[str]) -> BrokerSnapshot:
        assert self.access is not None
        management = self.access.factory().management
        infos = {}
        rabbit_queues = []
        for name in queues:
            queue = self.access.queue(name)
            rabbit_queues += [queue.names.workqueue, *(queue.names.delay_queue(ms) for ms in queue.delays())]
        if management is not None:
            import urllib.parse

            vhost = urllib.parse.quote(management.vhost, safe="")
            for rabbit in rabbit_queues:
                try:
                    infos[rabbit] = management.get(f"/api/queues/{vhost}/{urllib.parse.quote(rabbit, safe='')}")
                except Exception:   # absent (a delay queue gone): nothing to read there
                    infos[rabbit] = {}
        return snapshot_enqueue_ids(self.access.amqp_url, rabbit_queues, queue_info=infos)

    def _orphans(self, spark: SparkSession, settings: JobSettings, cql: Any, now_ms: int,
                 seen: dict[str, Any]) -> DataFrame:
        assert self.access is not None and self.s3 is not None
        store = self.access.blob_store()
        bucket = store.resolve(store.default_bucket)
        starts = content_starts(cql)
        floor_ms = now_ms - int(self.orphan_max_age.total_seconds() * 1000)
        if starts:
            floor_ms = max(floor_ms, min(epoch_ms(s) for s in starts.values()))
        until_ms = now_ms - int(self.orphan_min_age.total_seconds() * 1000)
        s3 = self.s3
        parallel = max(1, spark.sparkContext.defaultParallelism)
        listing = (spark.sparkContext.parallelize(list(BLOB_ID_ALPHABET), min(len(BLOB_ID_ALPHABET), parallel * 4))
                   .mapPartitions(lambda prefixes: _list_prefix(s3, bucket, prefixes)))
        blobs = spark.createDataFrame(listing, "blob_id string, size long, modified_ms long").cache()
        tables = {t: read_table(spark, settings, t, list(cols)) for t, cols in REFERENCES.items()}
        candidates = unreferenced(blobs, referenced_blob_ids(tables), floor_ms, until_ms).cache()
        feature_rows = candidates.rdd.mapPartitions(lambda rows: _features(s3, bucket, rows)).collect()
        pairing = pair([BlobFeatures.from_row(r) for r in feature_rows], window_ms=self.window_ms,
                       signature=self.signature, since_ms=floor_ms - 5 * 60_000, until_ms=now_ms)
        rows = [(ORPHAN, m.header.blob_id, self.target_queue, str(m.enqueue_id), None, None, m.name,
                 m.header.blob_id, m.body.blob_id, m.header.size + m.body.size, m.sender, list(m.recipients),
                 m.evidence) for m in pairing.recovered]
        reasons = Counter(a["reason"] for a in pairing.ambiguous)
        seen.update({"blobsScanned": blobs.count(), "unreferencedBlobs": len(feature_rows),
                     "wholeMails": len(pairing.recovered), "ambiguousOrphans": len(pairing.ambiguous),
                     "ambiguousReasons": dict(reasons), "ambiguousSample": pairing.ambiguous[:SAMPLE],
                     "wholeMailsSample": [{"name": m.name, "headerBlobId": m.header.blob_id,
                                           "bodyBlobId": m.body.blob_id, "evidence": m.evidence}
                                          for m in pairing.recovered[:SAMPLE]],
                     "orphanWindow": {"since": from_epoch_ms(floor_ms).isoformat(),
                                      "until": from_epoch_ms(until_ms).isoformat(), "bucket": bucket}})
        blobs.unpersist()
        candidates.unpersist()
        return spark.createDataFrame(rows, ITEM_SCHEMA)

    # ------------------------------------------------------------------ repair
    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        assert self.access is not None
        if item["kind"] == NOT_IN_BROKER:
            queue = self.access.queue(item["queuename"])
            entry = queue.entry(from_epoch_ms(item["timerangestart_ms"]), item["bucketid"],
                                as_uuid(item["enqueueid"]))
            if entry is None:
                return Outcome(SKIPPED, item)   # processed or removed since the detection
            if not queue.republish_entry(entry):
                return Outcome(FAILED, item, error="its content blobs are gone: nothing to deliver")
            return Outcome(FIXED, item, REPUBLISHED)
        return self._recover(item)

    def _recover(self, item: dict[str, Any]) -> Outcome:
        from mailserver.model.address import MailAddress
        from mailserver.model.mail import Mail, MailContent

        assert self.access is not None
        store = self.access.blob_store()
        if not (store.exists(store.default_bucket, item["headerblobid"])
                and store.exists(store.default_bucket, item["bodyblobid"])):
            return Outcome(SKIPPED, item)
        mail = Mail(name=item["name"], sender=MailAddress.of(item["sender"]) if item["sender"] else None,
                    recipients=[MailAddress.of(r) for r in item["recipients"]],
                    content=MailContent.of_blobs(item["headerblobid"], item["bodyblobid"], int(item["size"])),
                    remote_host="recovered", remote_addr="127.0.0.1")
        mail.set_attribute("mailserver.recovered", item["evidence"])
        # The orphans become the entry's blobs (what the interrupted enqueue meant): no copy that would leave
        # them orphaned again when the store does not deduplicate.
        self.access.queue(self.target_queue).enqueue(mail, enqueue_id=as_uuid(item["enqueueid"]), hand_over=True)
        return Outcome(FIXED, item, RECOVERED)

    # ------------------------------------------------------------------ report
    def report_fields(self, detection: Detection, result: SliceResult) -> dict[str, Any]:
        first, last = self.passes[0], self.passes[-1]
        return {"republish": {k: first.get(k) for k in (
                    "liveMailsInView", "brokerMessagesRead", "brokerMessagesUnreadable",
                    "brokerMessagesHeldByConsumers", "notInBroker", "notInBrokerSample")}
                | {"republished": result.counters.get(REPUBLISHED, 0),
                   "inFlightAfter": last.get("inFlight", 0) if len(self.passes) > 1 else 0},
                "orphans": ({k: first.get(k) for k in (
                    "blobsScanned", "unreferencedBlobs", "wholeMails", "ambiguousOrphans", "ambiguousReasons",
                    "ambiguousSample", "wholeMailsSample", "orphanWindow")}
                    | {"recovered": result.counters.get(RECOVERED, 0)}) if self.scan_orphans else None,
                "nbRequeuedMails": result.counters.get(REPUBLISHED, 0),
                REPUBLISHED: 0, RECOVERED: 0, **result.counters}

    # ------------------------------------------------------------------ around the run
    def fixed(self, item: dict[str, Any]) -> None:
        """The ids this run republished: the verification counts them in flight, not unresolved."""
        if item.get("kind") == NOT_IN_BROKER:
            self.republished.add(item["enqueueid"])

    def after_run(self, report: dict[str, Any], endpoint: CqlEndpoint, dry_run: bool) -> dict[str, Any]:
        """Step 3, the browse starts."""
        assert self.access is not None
        steps: dict[str, Any] = {}
        for name in sorted(browse_starts(endpoint.session(), self.queues)):
            view = self.access.queue(name).view
            before = view.browse_start()
            if dry_run or not self.move_browse_start:
                steps[name] = {"browseStart": before.isoformat() if before else None, "moved": False}
                continue
            moved = view.update_browse_start()
            after = view.browse_start()
            steps[name] = {"before": before.isoformat() if before else None,
                           "after": after.isoformat() if after else None, "moved": moved is not None}
        return {**report, "browseStart": steps}


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(RecoverLostMails(), argv)


if __name__ == "__main__":
    sys.exit(main())
