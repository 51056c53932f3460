"""Reprocess the mails of a mail repository once the cause that put them there is fixed.

James's ``PATCH /mailRepositories/{path}/mails?action=reprocess`` (``reprocessing-all``), with
filters and a dry run:

* detection (Spark): the repository's keys (``mailRepositoryKeys``) joined with their stored mails
  (``mailRepositoryContentV2``), filtered by sender, recipient (address or ``*@domain``), name and
  last update (``--older-than``), at most ``--limit`` (oldest first): one ``storedMail`` item each.
  A key without its mail is left to the repository (it drops it when read);
* repair, per mail, with the server's own ``mailserver.mailets.reprocess.reprocess``: the mail is
  marked ``mailRepository-reprocessing``, put in state ``--processor`` (its stored state when not
  given), enqueued on ``--queue`` (default ``spool``) and only then removed from the repository. A
  key gone meanwhile is skipped. A kill between the enqueue and the removal enqueues it again on
  the next run: local delivery stores one copy per mail and recipient, remote delivery may send twice;
* verification: detection again. A mail still there that this run reprocessed is *unresolved*:
  typically it failed again and was stored back, so the cause is not fixed.

Report: James's fields (``repositoryPath``, ``targetQueue``, ``targetProcessor``, ``consume``,
``limit``, ``maxRetries``, ``forRecipient``, ``initialCount``, ``remainingCount``) plus
``reprocessedMails`` and the framework's.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_queues import (
    MailFilters,
    QueueAccess,
    epoch_ms,
    now_utc,
    validate_queue_name,
    work_queue_exists,
)
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

STORED = "storedMail"
REPROCESSED = "reprocessedMails"


def repository_path(url: str) -> str:
    """``cassandra://var/mail/error/`` -> ``var/mail/error/`` (James's MailRepositoryPath)."""
    return url.split("://", 1)[1] if "://" in url else url


def stored_mails(keys: DataFrame, contents: DataFrame, url: str, filters: MailFilters, now_ms: int,
                 limit: int | None) -> DataFrame:
    """Pure: the ``storedMail`` items of repository ``url`` matching ``filters`` (oldest update first)."""
    from pyspark.sql import functions as F

    mine = keys.filter(F.col("name") == F.lit(url)).select("name", "mailkey")
    mails = (contents.filter(F.col("name") == F.lit(url))
             .select("name", "mailkey", "sender", "recipients",
                     F.unix_millis(F.col("lastupdated")).alias("lastupdated_ms")))
    rows = (mine.join(mails, ["name", "mailkey"])
            .filter(filters.condition(now_ms, name="mailkey", time_ms="lastupdated_ms")))
    if limit is not None:
        rows = rows.orderBy(F.col("lastupdated_ms").asc_nulls_first(), "mailkey").limit(limit)
    return rows.select(F.lit(STORED).alias("kind"), F.col("name").alias("url"), "mailkey", "sender",
                       "lastupdated_ms")


class ReprocessMailRepository(Procedure):
    job = "reprocessing-all"
    slice_columns = ("mailkey",)

    def __init__(self) -> None:
        self.url = ""
        self.target_queue = "spool"
        self.processor: str | None = None
        self.filters = MailFilters()
        self.limit: int | None = None
        self.access: QueueAccess | None = None
        self.key_counts: list[int] = []

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("reprocess")
        g.add_argument("--repository", required=True, help="the repository URL, e.g. cassandra://var/mail/error/")
        g.add_argument("--queue", default="spool", help="the queue the mails go to (default spool)")
        g.add_argument("--processor", help="the processor they restart in (default: each mail's stored state)")
        MailFilters.add_arguments(g, name_means="key", older_than_means="last updated")
        g.add_argument("--limit", type=int, help="at most this many mails, oldest first")
        g.add_argument("--amqp-url", help="the broker of the mail queues [AMQP_URL]")
        g.add_argument("--blob-bucket", help="bucket of the mail blobs [S3_DEFAULT_BUCKET, else <prefix>default]")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        from mailserver.repository.api import validate_url

        self.url = validate_url(args.repository)
        self.target_queue = validate_queue_name(args.queue)
        self.processor = (args.processor or "").strip() or None
        self.filters = MailFilters.from_args(args)
        if args.limit is not None and args.limit < 1:
            raise ValueError("--limit must be at least 1")
        self.limit = args.limit
        self.access = QueueAccess.from_env(JobSettings.from_args(args), os.environ, amqp_url=args.amqp_url,
                                           blob_bucket=args.blob_bucket)
        return {"repositoryPath": repository_path(self.url), "targetQueue": self.target_queue,
                "targetProcessor": self.processor, "limit": self.limit, **self.filters.as_options()}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        assert self.access is not None
        if not work_queue_exists(self.access.amqp_url, self.target_queue):
            raise ValueError(f"no mail queue {self.target_queue!r} on the broker: the mails would have nowhere to go")
        keys = read_table(spark, settings, "mailrepositorykeys", ["name", "mailkey"])
        contents = read_table(spark, settings, "mailrepositorycontentv2",
                              ["name", "mailkey", "sender", "recipients", "lastupdated"])
        from pyspark.sql import functions as F

        self.key_counts.append(keys.filter(F.col("name") == F.lit(self.url)).count())
        items = stored_mails(keys, contents, self.url, self.filters, epoch_ms(now_utc()), self.limit)
        return Detection(items.localCheckpoint(), {"initialCount": self.key_counts[0]})

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        from mailserver.mailets.reprocess import reprocess

        assert self.access is not None
        repository = self.access.repository(item["url"])
        mail = reprocess(repository, item["mailkey"], self.processor, self.access.queue(self.target_queue))
        if mail is None:
            return Outcome(SKIPPED, item)   # removed (or reprocessed) since the detection
        return Outcome(FIXED, {**item, "state": mail.state}, REPROCESSED)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        recipient = self.filters.recipient
        return {"repositoryPath": repository_path(self.url), "targetQueue": self.target_queue,
                "targetProcessor": self.processor, "consume": True, "limit": self.limit, "maxRetries": None,
                "forRecipient": recipient.address if recipient is not None else None,
                "initialCount": self.key_counts[0], "remainingCount": self.key_counts[-1],
                REPROCESSED: 0, **result.counters}


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(ReprocessMailRepository(), argv)


if __name__ == "__main__":
    sys.exit(main())
