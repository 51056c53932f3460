"""Drain a mail queue: the mails matching filters are deleted, moved to a mail repository, or held (delayed).

James's ``DELETE /mailQueues/{q}/mails?sender=|recipient=|name=`` (``delete-mails-from-mail-queue``)
and clear (``clear-mail-queue``), with filters that combine (sender, recipient, name, older than;
addresses exact or ``*@domain``) and two more actions:

* detection (Spark): the browse view of the queue (``enqueuedMailsV4`` from ``browseStart``, minus
  ``deletedMailsV2``) filtered: one ``matchingMail`` item per mail. A dry run counts them and stops;
* repair, per mail, through the server's ``DistributedMailQueue`` (re-read first: a mail dequeued or
  removed meanwhile is skipped):
  - ``delete``: James's remove (marked deleted: its broker message is skipped at dequeue; blobs deleted);
  - ``move``: stored in the mail repository (its content blobs are handed over, not copied), then
    removed from the queue; a crash in between stores it again on the next run (same key);
  - ``hold``: enqueued again with a delay (``--hold-for``) under an enqueueId derived from the
    original (a retried run's second copy is skipped once one was processed), then the original
    removed. Needs the server's delay extension (its delay exchange).
* verification: detection again; ``hold`` does not select mails already delayed, so held mails are
  not found again.

The broker keeps the messages of removed mails until a consumer skips them (James's design): the
report gives the view's live count and the broker's ready messages after the run.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import as_uuid
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_queues import (
    WORKQUEUE_PREFIX,
    MailFilters,
    QueueAccess,
    browse_starts,
    epoch_ms,
    from_epoch_ms,
    job_duration,
    now_utc,
    read_live_view,
    ready_count,
    validate_queue_name,
    work_queue_exists,
)
from spark_apps.common.procedure import FAILED, FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MATCHING = "matchingMail"
ACTIONS = ("delete", "move", "hold")
COUNTERS = {"delete": "deletedMails", "move": "movedMails", "hold": "heldMails"}
HOLD_NAMESPACE = uuid.UUID("6c1f0e49-2f0b-4b5e-9a57-2d8a3c0c1f15")
ITEM_COLUMNS = ("kind", "queuename", "enqueueid", "timerangestart_ms", "bucketid", "name", "sender",
                "enqueuedtime_ms")


def held_copy_id(enqueue_id: str | uuid.UUID) -> uuid.UUID:
    """The enqueueId of the delayed copy of a held mail: the same for every attempt of the hold."""
    return uuid.uuid5(HOLD_NAMESPACE, str(enqueue_id))


def matching_mails(live: DataFrame, filters: MailFilters, now_ms: int, action: str) -> DataFrame:
    """Pure: the ``matchingMail`` items of live view entries (``mail_queues.live_view_entries``).

    ``hold`` leaves out the mails already delayed (their due time is in the future), so held mails are
    not held again and the verification does not find them.
    """
    from pyspark.sql import functions as F

    rows = live.filter(filters.condition(now_ms, time_ms="enqueuedtime_ms"))
    if action == "hold":
        rows = rows.filter(F.col("nextdelivery_ms").isNull() | (F.col("nextdelivery_ms") <= F.lit(now_ms)))
    return rows.select(F.lit(MATCHING).alias("kind"), "queuename", F.col("enqueueid").cast("string"),
                       "timerangestart_ms", "bucketid", "name", "sender", "enqueuedtime_ms")


class DrainMailQueue(Procedure):
    job = "drain-mail-queue"
    slice_columns = ("enqueueid",)

    def __init__(self) -> None:
        self.queue_name = "spool"
        self.filters = MailFilters()
        self.action = "delete"
        self.repository_url: str | None = None
        self.hold_for: timedelta | None = None
        self.access: QueueAccess | None = None
        self.live_counts: list[int] = []
        self.dry_run = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("drain")
        g.add_argument("--queue", default="spool", help="the mail queue (default spool)")
        MailFilters.add_arguments(g, name_means="name", older_than_means="enqueued")
        g.add_argument("--action", choices=ACTIONS, default="delete")
        g.add_argument("--repository", help="move: the mail repository URL, e.g. cassandra://var/mail/drained/")
        g.add_argument("--hold-for", help="hold: how long the mails wait before delivery (e.g. 2h)")
        g.add_argument("--amqp-url", help="the broker of the mail queues [AMQP_URL]")
        g.add_argument("--blob-bucket", help="bucket of the mail blobs [S3_DEFAULT_BUCKET, else <prefix>default]")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        from mailserver.repository.api import validate_url

        self.queue_name = validate_queue_name(args.queue)
        self.filters = MailFilters.from_args(args)
        self.action = args.action
        self.dry_run = bool(args.dry_run)
        if self.action == "move":
            if not args.repository:
                raise ValueError("--action move needs --repository (e.g. cassandra://var/mail/drained/)")
            self.repository_url = validate_url(args.repository)
        elif args.repository:
            raise ValueError("--repository is only for --action move")
        if self.action == "hold":
            if not args.hold_for:
                raise ValueError("--action hold needs --hold-for (e.g. 2h)")
            self.hold_for = job_duration(args.hold_for)
            if self.hold_for <= timedelta(0):
                raise ValueError("--hold-for must be positive")
        elif args.hold_for:
            raise ValueError("--hold-for is only for --action hold")
        settings = JobSettings.from_args(args)
        self.access = QueueAccess.from_env(settings, os.environ, amqp_url=args.amqp_url,
                                           blob_bucket=args.blob_bucket)
        return {"mailQueueName": self.queue_name, **self.filters.as_options(), "action": self.action,
                "repository": self.repository_url,
                "holdFor": f"{int(self.hold_for.total_seconds())}s" if self.hold_for else None}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:

        assert self.access is not None
        if not work_queue_exists(self.access.amqp_url, self.queue_name):
            raise ValueError(f"no mail queue {self.queue_name!r} on the broker ({WORKQUEUE_PREFIX}{self.queue_name})")
        cql = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace).session()
        starts = browse_starts(cql, [self.queue_name])
        if not starts:
            raise ValueError(f"mail queue {self.queue_name!r} has no browse start: it was never initialised")
        live = read_live_view(spark, settings, starts).cache()
        self.live_counts.append(live.count())
        items = matching_mails(live, self.filters, epoch_ms(now_utc()), self.action)
        return Detection(items.localCheckpoint(), {"initialCount": self.live_counts[0]})

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        assert self.access is not None
        queue = self.access.queue(item["queuename"])
        entry = queue.entry(from_epoch_ms(item["timerangestart_ms"]), item["bucketid"], as_uuid(item["enqueueid"]))
        if entry is None:
            return Outcome(SKIPPED, item)   # dequeued or removed since the detection
        if self.action == "delete":
            queue.remove_entry(entry)
            return Outcome(FIXED, item, COUNTERS["delete"])
        from mailserver.blob.api import BlobNotFound

        try:
            mail = queue.load(entry)
        except BlobNotFound as exc:
            return Outcome(FAILED, item, error=f"content gone: {exc}")
        if self.action == "move":
            assert self.repository_url is not None
            key = self._store(mail, entry.enqueue_id)
            queue.remove_entry(entry)   # the repository stored its own copy (shared blobs when deduplicating)
            return Outcome(FIXED, {**item, "repositoryKey": key}, COUNTERS["move"])
        copy_id = held_copy_id(entry.enqueue_id)
        queue.enqueue(mail, delay=self.hold_for, enqueue_id=copy_id)
        queue.remove_entry(entry)
        return Outcome(FIXED, {**item, "heldAs": str(copy_id)}, COUNTERS["hold"])

    def _store(self, mail: Any, enqueue_id: uuid.UUID) -> str:
        """Store under the mail's name, unless another mail (other content) already has that key."""
        assert self.access is not None and self.repository_url is not None
        repository = self.access.repository(self.repository_url)
        existing = repository.retrieve(mail.name)
        if existing is not None and (existing.content.header_blob_id, existing.content.body_blob_id) != (
                mail.content.header_blob_id, mail.content.body_blob_id):
            mail.name = f"{mail.name}-{enqueue_id}"
        if mail.error_message is None:
            mail.error_message = f"drained from mail queue {self.queue_name}"
        return repository.store(mail)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        assert self.access is not None
        remaining = self.live_counts[-1] if len(self.live_counts) > 1 else self.live_counts[0]
        counters = {COUNTERS[self.action]: 0, **result.counters}
        ready = None if self.dry_run else ready_count(self.access.amqp_url, WORKQUEUE_PREFIX + self.queue_name)
        return {"mailQueueName": self.queue_name, **self.filters.as_options(), "action": self.action,
                "initialCount": self.live_counts[0], "remainingCount": remaining, **counters,
                "brokerReadyMessages": ready}


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(DrainMailQueue(), argv)


if __name__ == "__main__":
    sys.exit(main())
