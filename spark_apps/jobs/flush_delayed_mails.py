"""Flush the delayed mails of a mail queue: every mail waiting out a delay becomes due now.

James's ``PATCH /mailQueues/{q}/mails?delayed=true`` with ``{"delayed": false}`` (a no-op on James's
RabbitMQ queue, which ignores delays; here delays are TTL queues, the delayer pattern):

* detection (Spark): the browse view's live entries of the queue whose due time is in the future
  (``delayedMails``, with a sample), and the ready messages of each delay queue (AMQP, exact);
  a dry run stops there;
* flush, through the server's ``DistributedMailQueue.flush``: each message of the delay queues is
  published to the work exchange (confirmed) and only then acknowledged, at most ``--rate`` per
  second, and its due time is cleared in the view. Idempotent and resumable: what was moved is no
  longer in a delay queue, a retried run moves the rest; a kill between the publish and the ack
  leaves two messages under one enqueueId, and dequeue skips the second once the first was processed;
* verification: detection again. A mail enqueued with a delay before the flush started and still
  delayed is *unresolved* (PARTIAL); mails delayed since (remote-delivery retries go on) are
  reported as ``newSinceFlush``.

Needs the management API (``--management-url`` or ``RABBITMQ_MANAGEMENT_URL``) to list the delay queues.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.job_run import COMPLETED, DRY_RUN, PARTIAL, RunOptions, job_parser, run_job
from spark_apps.common.mail_queues import (
    WORKQUEUE_PREFIX,
    QueueAccess,
    browse_starts,
    epoch_ms,
    now_utc,
    read_live_view,
    ready_count,
    validate_queue_name,
    work_queue_exists,
)
from spark_apps.common.settings import JobSettings
from spark_apps.common.throttle import RateLimiter

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("mailplatform.flush")
JOB = "flush-delayed-mails"


def delayed_mails(live: DataFrame, now_ms: int) -> DataFrame:
    """Pure: the live entries still waiting out a delay (due time after ``now_ms``)."""
    from pyspark.sql import functions as F

    return (live.filter(F.col("nextdelivery_ms").isNotNull() & (F.col("nextdelivery_ms") > F.lit(now_ms)))
            .select(F.col("enqueueid").cast("string"), "name", "enqueuedtime_ms", "nextdelivery_ms"))


def verdict(still_delayed: Sequence[dict[str, Any]], flush_started_ms: int) -> tuple[int, int]:
    """Pure: (unresolved, new since the flush) among the entries still delayed after it."""
    unresolved = sum(1 for e in still_delayed if e["enqueuedtime_ms"] < flush_started_ms)
    return unresolved, len(still_delayed) - unresolved


def parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, JobSettings, RunOptions]:
    parser = job_parser(JOB, __doc__.splitlines()[0])
    g = parser.add_argument_group("flush")
    g.add_argument("--queue", default="outgoing", help="the mail queue (default outgoing, where retries wait)")
    g.add_argument("--amqp-url", help="the broker of the mail queues [AMQP_URL]")
    g.add_argument("--management-url", help="RabbitMQ management API, to list the delay queues "
                                            "[RABBITMQ_MANAGEMENT_URL]")
    g.add_argument("--blob-bucket", help="bucket of the mail blobs [S3_DEFAULT_BUCKET, else <prefix>default]")
    args = parser.parse_args(argv)
    try:
        validate_queue_name(args.queue)
        options = RunOptions.from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    return args, JobSettings.from_args(args), options


class FlushRun:
    def __init__(self, spark: SparkSession, settings: JobSettings, access: QueueAccess, queue_name: str,
                 options: RunOptions) -> None:
        self.spark, self.settings, self.access, self.queue_name, self.options = (spark, settings, access,
                                                                                 queue_name, options)
        self.cql = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace).session()

    def delayed(self) -> list[dict[str, Any]]:
        starts = browse_starts(self.cql, [self.queue_name])
        if not starts:
            return []
        rows = delayed_mails(read_live_view(self.spark, self.settings, starts), epoch_ms(now_utc())).collect()
        return [r.asDict() for r in rows]

    def delay_queues(self) -> dict[str, int]:
        queue = self.access.queue(self.queue_name)
        depths = {}
        for millis in queue.delays():
            name = queue.names.delay_queue(millis)
            depths[name] = ready_count(self.access.amqp_url, name) or 0
        return depths

    def run(self) -> dict[str, Any]:
        started = time.monotonic()
        if not work_queue_exists(self.access.amqp_url, self.queue_name):
            raise ValueError(f"no mail queue {self.queue_name!r} on the broker ({WORKQUEUE_PREFIX}{self.queue_name})")
        before = self.delayed()
        depths_before = self.delay_queues()
        sample = self.options.sample_size
        base = {"type": JOB, "timestamp": datetime.now(UTC).isoformat(), "runKey": self.options.run_key,
                "dryRun": self.options.dry_run, "mailQueueName": self.queue_name,
                "runningOptions": {"mailQueueName": self.queue_name, "rate": self.options.rate},
                "detected": {"delayedMails": len(before)} if before else {},
                "delayedMails": len(before), "delayQueues": depths_before,
                "delayedItems": before[:sample]}
        if self.options.dry_run:
            return {**base, "flushedMails": 0, "outcome": DRY_RUN,
                    "durationSeconds": round(time.monotonic() - started, 3)}
        limiter = RateLimiter(self.options.rate)
        flush_started_ms = epoch_ms(now_utc())
        moved = self.access.queue(self.queue_name).flush(before_each=limiter.acquire)
        after = self.delayed()
        unresolved, new_since = verdict(after, flush_started_ms)
        return {**base, "flushedMails": moved, "remaining": {"delayedMails": len(after)} if after else {},
                "unresolved": unresolved, "newSinceFlush": new_since, "delayQueuesAfter": self.delay_queues(),
                "unresolvedItems": [e for e in after if e["enqueuedtime_ms"] < flush_started_ms][:sample],
                "outcome": COMPLETED if unresolved == 0 else PARTIAL,
                "durationSeconds": round(time.monotonic() - started, 3)}


def delayed_before_and_remaining(report: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return {"delayedMails": report["delayedMails"]}, report.get("remaining", {})


def main(argv: Sequence[str] | None = None) -> int:
    args, settings, options = parse(argv if argv is not None else sys.argv[1:])
    access = QueueAccess.from_env(settings, os.environ, amqp_url=args.amqp_url, management_url=args.management_url,
                                 blob_bucket=args.blob_bucket)
    if not access.management_url:
        print("no management API: give --management-url or set RABBITMQ_MANAGEMENT_URL (the delay queues are "
              "listed through it)", file=sys.stderr)
        return 2
    audited = {"mailQueueName": args.queue, "dryRun": options.dry_run, "rate": options.rate}
    # No summary block: a flush moves mails, it fixes no detected items (flushedMails is in the report).
    return run_job(JOB, settings, options, audited,
                   lambda spark, _endpoint: FlushRun(spark, settings, access, args.queue, options).run(),
                   counts=delayed_before_and_remaining, summary=None)


if __name__ == "__main__":
    sys.exit(main())
