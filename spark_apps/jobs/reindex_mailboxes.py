"""Reindex the OpenSearch mailbox index from the source of truth (James's ReIndexing tasks).

The truth is ``imapUidTable`` (message M is in mailbox X with uid U, these flags and modseq), the
owner comes from ``mailboxPathV3``, the content from the mail bucket (``messageV3``'s header and
body blob ids). The index is read through the read alias (ids, flags, modseq only). Items:

* ``missingDocument``: a message without a document -> indexed;
* ``outdatedDocument``: flags or modseq differ (compared with ``flags_of``) -> rewritten;
* ``orphanDocument``: a document whose message is no longer in Cassandra -> deleted;
* ``upToDateDocument``: only in ``--mode rebuildAll`` (James's default mode), where every message
  in scope is indexed again.

``--mode fixOutdated`` (James's) takes only the first three. Scopes: everything, ``--user``,
``--mailbox-id``, one message (``--mailbox-id`` and ``--uid``), or the failures of a previous run
(``--failures-of RUN_KEY``, James's ``reIndexFailedMessagesOf``: the ``messageFailures`` and
``mailboxFailures`` of that run's report, read from S3: exactly those messages, and every message of
those mailboxes). Documents are built on the
executors with the server's ``message_document`` and written per batch with ``bulk_index`` through
the write alias (to every index behind it: both during an alias swap). Each item is re-read from
Cassandra before writing; an orphan is deleted only when ``messageIdTable`` has no row for it
either. After the repair, the comparison runs again (fixOutdated): nothing may differ.

Where the time goes (``docs/benchmarks.md``): the index is scrolled by the executors (sliced scroll),
not the driver; the re-reads are the connector's joins (``imapUidTable`` by primary key, ``messageV3``
and ``messageIdTable`` likewise, asynchronous lookups in the JVM of exactly a slice's items, made as
the slice is repaired: a table scan would be read again for every slice and be minutes old), so
Python makes no Cassandra request; the executors fetch the contents with many S3 requests in flight
and keep ``_bulk`` requests outstanding while they fetch (``spark_apps.common.reindex_pipeline``).
``--rate``/``--messages-per-second`` bounds the messages per second (James's ``messagesPerSecond``).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_apps.common.bookkeeping import SliceResult
from spark_apps.common.cassandra_tables import MESSAGE_METADATA_COLUMNS, read_table, user_mailbox_ids
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_blobs import S3Access, mail_bucket
from spark_apps.common.procedure import (
    FAILED,
    FIXED,
    Detection,
    Outcome,
    Procedure,
    ProcedureRunner,
    RunOptions,
)
from spark_apps.common.search_reindex import SYSTEM_FLAGS, SearchAccess
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TASK = "full-reindexing"
USER_TASK, MAILBOX_TASK, MESSAGE_TASK = "user-reindexing", "mailbox-reindexing", "message-reindexing"
ERROR_RECOVERY_TASK = "error-recovery-indexation"
MODES = ("rebuildAll", "fixOutdated")
MISSING, OUTDATED, ORPHAN, UP_TO_DATE = "missingDocument", "outdatedDocument", "orphanDocument", "upToDateDocument"
COUNTERS = {MISSING: "indexedMessageCount", UP_TO_DATE: "indexedMessageCount", OUTDATED: "fixedMessageCount",
            ORPHAN: "deletedDocumentCount"}
DEFAULT_BLOB_BUCKET = "default"
SCROLL_PAGE = 2000
# Lookups by primary key, whatever the sizes: a slice's items are a fraction of the table. Each joined table
# keeps that many lookups in flight per task (the connector's 512 overran the driver's connection, whose
# requests in flight are bounded, once two joins ran in two tasks).
DIRECT_JOIN = {"directJoinSetting": "on", "spark.cassandra.concurrent.reads": "64"}
TRUTH_COLUMNS = ("messageid", "mailboxid", "uid", *MESSAGE_METADATA_COLUMNS)
CONTENT_COLUMNS = ("messageid", "headercontent", "bodycontent", "internaldate", "fullcontentoctets")


def truth_signatures(uids: DataFrame) -> DataFrame:
    """Pure: (mailboxid, uid, messageid, sig) of ``imapUidTable`` rows; ``sig`` as ``search_reindex.signature``."""
    from pyspark.sql import functions as F

    system = F.concat_ws(",", *[F.when(F.col(flag.column.lower()), F.lit(flag.value))
                                for flag in sorted(SYSTEM_FLAGS, key=lambda f: f.value)])
    user = F.concat_ws(",", F.array_sort(F.coalesce(F.col("userflags"), F.array().cast("array<string>"))))
    modseq = F.coalesce(F.col("modseq"), F.lit(0)).cast("long").cast("string")
    return uids.select("mailboxid", F.col("uid").cast("long").alias("uid"), "messageid",
                       F.concat_ws("|", system, user, modseq).alias("sig"))


def compare(truth: DataFrame, indexed: DataFrame, owners: DataFrame) -> DataFrame:
    """Pure: (kind, mailboxid, uid, messageid, user) for every message and every document in scope."""
    from pyspark.sql import functions as F

    joined = truth.join(indexed, ["mailboxid", "uid"], "full_outer").join(owners, "mailboxid", "left")
    kind = (F.when(F.col("isig").isNull(), F.lit(MISSING)).when(F.col("sig").isNull(), F.lit(ORPHAN))
            .when(F.col("sig") != F.col("isig"), F.lit(OUTDATED)).otherwise(F.lit(UP_TO_DATE)))
    return joined.select(kind.alias("kind"), "mailboxid", "uid", "messageid", "user")


class ReindexMailboxes(Procedure):
    job = TASK
    slice_columns = ("mailboxid", "uid")

    def __init__(self) -> None:
        self.mode = "rebuildAll"
        self.user: str | None = None
        self.mailbox_id: str | None = None
        self.uid: int | None = None
        self.bucket = DEFAULT_BLOB_BUCKET
        self.s3: S3Access | None = None
        self.search: SearchAccess | None = None
        self.failures: PreviousFailures | None = None
        self.settings: JobSettings | None = None   # set by detect: the repair's joins read the same keyspace
        self._verifying = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--mode", choices=MODES, default="rebuildAll",
                            help="rebuildAll: index every message in scope (James's default); "
                                 "fixOutdated: only missing, outdated and orphan documents")
        parser.add_argument("--user", help="only this user's mailboxes")
        parser.add_argument("--mailbox-id", help="only this mailbox")
        parser.add_argument("--uid", type=int, help="only this message of --mailbox-id")
        parser.add_argument("--failures-of", metavar="RUN_KEY",
                            help="only the messageFailures and mailboxFailures of that run's report "
                                 "(James's reIndexFailedMessagesOf)")
        parser.add_argument("--messages-per-second", dest="rate", type=float,
                            help="James's messagesPerSecond (same as --rate)")
        parser.add_argument("--blob-bucket",
                            help="bucket of the message blobs [S3_DEFAULT_BUCKET, else <prefix>default]")
        parser.add_argument("--read-alias", help="alias compared [OPENSEARCH_ALIAS_READ_MAILBOX_NAME]")
        parser.add_argument("--write-alias", help="alias written [OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME]")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        from mailserver.search.config import SearchConfig, check_index_name

        if args.uid is not None and not args.mailbox_id:
            raise ValueError("--uid needs --mailbox-id")
        if args.user and args.mailbox_id:
            raise ValueError("--user and --mailbox-id are exclusive")
        if args.uid is not None and args.uid < 1:
            raise ValueError("--uid must be positive")
        if args.mailbox_id:
            uuid.UUID(args.mailbox_id)   # ValueError for a malformed id
        if args.failures_of and (args.user or args.mailbox_id):
            raise ValueError("--failures-of is a scope of its own: no --user, --mailbox-id or --uid")
        self.mode, self.uid = args.mode, args.uid
        self.user = args.user.strip().lower() if args.user else None
        self.mailbox_id = args.mailbox_id.lower() if args.mailbox_id else None
        self.bucket = mail_bucket(args.blob_bucket, os.environ)
        self.s3 = S3Access.from_env(os.environ)
        config = SearchConfig.from_env(os.environ)
        if config is None:
            raise ValueError("OPENSEARCH_URL is not set: there is no index to rebuild")
        read_alias = check_index_name(args.read_alias or config.read_alias, "--read-alias", alias=True)
        write_alias = check_index_name(args.write_alias or config.write_alias, "--write-alias", alias=True)
        if read_alias == write_alias:
            raise ValueError("the read and write aliases must differ")
        self.search = SearchAccess(config.urls, read_alias, write_alias, config.timeout)
        options: dict[str, Any] = {"mode": self.mode, "messagesPerSecond": args.rate, "blobBucket": self.bucket,
                                   "readAlias": read_alias, "writeAlias": write_alias}
        for key, value in (("username", self.user), ("mailboxId", self.mailbox_id), ("uid", self.uid)):
            if value is not None:
                options[key] = value
        if args.failures_of:
            self.failures = PreviousFailures.of_run(args.failures_of, args.report_bucket)
            options["failuresOf"] = args.failures_of
        return options

    def task_type(self) -> str:
        if self.failures is not None:
            return ERROR_RECOVERY_TASK
        if self.uid is not None:
            return MESSAGE_TASK
        return MAILBOX_TASK if self.mailbox_id else USER_TASK if self.user else TASK

    # ------------------------------------------------------------ detection (driver)
    def _scope_mailboxes(self, spark: SparkSession, settings: JobSettings) -> list[str] | None:
        if self.failures is not None:
            return self.failures.mailboxes()
        if self.mailbox_id:
            return [self.mailbox_id]
        if self.user:
            return [str(m) for m in user_mailbox_ids(spark, settings, self.user)]
        return None

    def _indexed(self, spark: SparkSession, mailboxes: list[str] | None) -> DataFrame:
        """(mailboxid, uid, isig) of the documents in scope, scrolled by the executors (one slice each)."""
        from spark_apps.common.search_reindex import scroll_signatures

        assert self.search is not None
        client = self.search.client()
        client.indices.refresh(index=self.search.read_alias)
        if self.uid is not None:
            query: dict[str, Any] = {"bool": {"filter": [{"term": {"mailboxId": self.mailbox_id}},
                                                         {"term": {"uid": self.uid}}]}}
        elif mailboxes is not None:
            should: list[dict[str, Any]] = [{"terms": {"mailboxId": mailboxes}}]
            if self.user:
                should.append({"term": {"user": self.user}})
            query = {"bool": {"should": should, "minimum_should_match": 1}}
        else:
            query = {"match_all": {}}
        schema = "mailboxid string, uid long, isig string"
        if mailboxes == []:
            return spark.createDataFrame([], schema)
        search, failures = self.search, self.failures
        slices = max(2, spark.sparkContext.defaultParallelism)   # a sliced scroll has at least two
        rows = (spark.sparkContext.parallelize(range(slices), slices)
                .mapPartitions(lambda ids: (row for i in ids
                                            for row in scroll_signatures(search, query, i, slices, SCROLL_PAGE)
                                            if failures is None or failures.covers(row[0], row[1]))))
        return spark.createDataFrame(rows, schema)

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        from pyspark.sql import functions as F

        everything, self._verifying = self.mode == "rebuildAll" and not self._verifying, True
        mailboxes = self._scope_mailboxes(spark, settings)
        columns = ["messageid", "mailboxid", "uid", "modseq", "userflags", *[f.column.lower() for f in SYSTEM_FLAGS]]
        uids = read_table(spark, settings, "imapuidtable", columns)
        if mailboxes is not None:
            uids = uids.filter(F.col("mailboxid").isin(mailboxes))
        if self.uid is not None:
            uids = uids.filter(F.col("uid") == self.uid)
        owners = read_table(spark, settings, "mailboxpathv3", ["user", "mailboxid"]).dropDuplicates(["mailboxid"])
        truth = truth_signatures(uids)
        if self.failures is not None:
            truth = self.failures.select(spark, truth)
        truth = truth.cache()
        self.settings = settings
        indexed = self._indexed(spark, mailboxes).cache()
        every = compare(truth, indexed, owners).cache()
        items = every if everything else every.filter(F.col("kind") != UP_TO_DATE)
        return Detection(items, {"scannedMessageCount": truth.count(), "indexedDocumentCount": indexed.count()})

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        counters = result.counters
        fields = {"type": self.task_type(), **detection.processed,
                  "processedMessageCount": sum(counters.get(c, 0) for c in set(COUNTERS.values())),
                  "indexedMessageCount": counters.get("indexedMessageCount", 0),
                  "fixedMessageCount": counters.get("fixedMessageCount", 0),
                  "deletedDocumentCount": counters.get("deletedDocumentCount", 0),
                  "failedMessageCount": len(result.failures),
                  # James's names: every message written or deleted, and the failures
                  "successfullyReprocessedMailCount": sum(counters.get(c, 0) for c in set(COUNTERS.values())),
                  "failedReprocessedMailCount": len(result.failures),
                  "skippedResolvedMeanwhile": counters.get("skippedResolvedMeanwhile", 0),
                  # James's REST form, the input of a rerun: {mailboxId: [{"uid": 1}, ...]}
                  "messageFailures": _failures_by_mailbox(result.failures), "mailboxFailures": []}
        return fields

    # ------------------------------------------------------------ repair (executors)
    def outcome(self, status: str, item: dict[str, Any], counter: str | None = None,
                error: str | None = None) -> Outcome:
        return Outcome(status, item, counter, error)

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        return self.repair_batch(endpoint, [item])[0]

    def repair_batch(self, endpoint: CqlEndpoint, items: list[dict[str, Any]]) -> list[Outcome]:
        """Items repaired outside Spark: the rows ``with_sources`` joins, read here with point reads."""
        from spark_apps.common.reindex_pipeline import reindex_partition

        cql = endpoint.session()

        def sources(item: dict[str, Any]) -> dict[str, Any]:
            mailbox, uid = uuid.UUID(str(item["mailboxid"])), int(item["uid"])
            if item["kind"] == ORPHAN:
                projected = cql.execute("SELECT uid FROM messageidtable WHERE mailboxid = ? AND uid = ?",
                                        (mailbox, uid))
                return {**item, "projected": bool(projected)}
            message = uuid.UUID(str(item["messageid"]))
            truth = cql.execute(f"SELECT {', '.join(TRUTH_COLUMNS)} FROM imapuidtable "
                                "WHERE messageid = ? AND mailboxid = ? AND uid = ?", (message, mailbox, uid))
            content = cql.execute(f"SELECT {', '.join(CONTENT_COLUMNS)} FROM messagev3 WHERE messageid = ?", (message,))
            return {**item, "truth": truth[0] if truth else None, "content": content[0] if content else None}

        outcomes = {(str(o["item"]["mailboxid"]), int(o["item"]["uid"])): o
                    for o in reindex_partition(self, None, [sources(i) for i in items], counters=COUNTERS,
                                               orphan_kind=ORPHAN)}
        return [Outcome(**outcomes[(str(i["mailboxid"]), int(i["uid"]))]) for i in items]

    def with_sources(self, items: DataFrame, parallel: int) -> DataFrame:
        """``items`` spread over ``parallel`` partitions, each row joined with what its repair reads.

        ``truth``: the ``imapUidTable`` row (null when the message is gone), ``content``: ``messageV3``'s blob
        ids (null without a row), for orphans ``projected``: whether ``messageIdTable`` has the message. The
        joins are the connector's lookups by primary key, run as each partition is repaired (fresh reads)."""
        from pyspark.sql import functions as F

        assert self.settings is not None, "detect runs first"
        spark, settings = items.sparkSession, self.settings
        item_columns = [c for c in items.columns if c != "slice"]

        def prefixed(table: str, columns: Sequence[str], prefix: str) -> DataFrame:
            return read_table(spark, settings, table, columns, DIRECT_JOIN).select(
                *[F.col(c).alias(prefix + c) for c in columns])

        def struct_of(prefix: str, columns: Sequence[str]) -> Any:
            fields = [(F.unix_micros(F.col(prefix + c)) if c in ("internaldate", "save_date") else F.col(prefix + c))
                      .alias(c) for c in columns]
            return F.when(F.col(prefix + "messageid").isNotNull(), F.struct(*fields))

        messages = items.filter(F.col("kind") != ORPHAN).repartition(parallel)
        truth, content = prefixed("imapuidtable", TRUTH_COLUMNS, "t_"), prefixed("messagev3", CONTENT_COLUMNS, "m_")
        messages = (messages
                    .join(truth, (messages.messageid == truth.t_messageid) & (messages.mailboxid == truth.t_mailboxid)
                          & (messages.uid == truth.t_uid), "left")
                    .join(content, messages.messageid == content.m_messageid, "left")
                    .select(*item_columns, struct_of("t_", TRUTH_COLUMNS).alias("truth"),
                            struct_of("m_", CONTENT_COLUMNS).alias("content"), F.lit(None).cast("boolean")
                            .alias("projected")))
        orphans = items.filter(F.col("kind") == ORPHAN).repartition(parallel)
        projection = prefixed("messageidtable", ("mailboxid", "uid"), "p_")
        orphans = (orphans.join(projection, (orphans.mailboxid == projection.p_mailboxid)
                                & (orphans.uid == projection.p_uid), "left")
                   .select(*item_columns, *[F.lit(None).cast(messages.schema[c].dataType).alias(c)
                                            for c in ("truth", "content")],
                           F.col("p_uid").isNotNull().alias("projected")))
        return messages.unionByName(orphans)


@dataclass(frozen=True)
class PreviousFailures:
    """What a previous run could not do, from its report (James's REST shapes): the scope of a rerun."""

    messages: frozenset[tuple[str, int]]   # (mailbox id, uid) of messageFailures
    whole_mailboxes: frozenset[str]        # mailboxFailures

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> PreviousFailures:
        by_mailbox, mailboxes = report.get("messageFailures"), report.get("mailboxFailures", [])
        if not isinstance(by_mailbox, dict) or not isinstance(mailboxes, list):
            raise ValueError(f"the report of type {report.get('type')!r} has no messageFailures/mailboxFailures: "
                             "it is not the report of a reindex run")
        messages = frozenset((str(uuid.UUID(str(mailbox))), int(entry["uid"]))
                             for mailbox, entries in by_mailbox.items() for entry in entries)
        return cls(messages, frozenset(str(uuid.UUID(str(m))) for m in mailboxes))

    @classmethod
    def of_run(cls, run_key: str, bucket: str | None) -> PreviousFailures:
        from spark_apps.common.reports import ReportLocation, read_report

        location = ReportLocation.for_run(TASK, run_key, bucket)
        try:
            report = read_report(location)
        except Exception as exc:
            raise ValueError(f"no report of run {run_key} at {location.uri} ({type(exc).__name__}: {exc})") from exc
        return cls.from_report(report)

    def mailboxes(self) -> list[str]:
        return sorted({m for m, _ in self.messages} | self.whole_mailboxes)

    def covers(self, mailbox_id: str, uid: int) -> bool:
        return mailbox_id in self.whole_mailboxes or (mailbox_id, int(uid)) in self.messages

    def select(self, spark: SparkSession, frame: DataFrame) -> DataFrame:
        """Pure on ``frame`` (mailboxid, uid, ...): the rows these failures name."""
        from pyspark.sql import functions as F

        pairs = spark.createDataFrame(sorted(self.messages), "mailboxid string, uid long")
        listed = frame.join(F.broadcast(pairs), ["mailboxid", "uid"], "left_semi")
        if not self.whole_mailboxes:
            return listed
        whole = frame.filter(F.col("mailboxid").isin(sorted(self.whole_mailboxes)))
        return listed.unionByName(whole).dropDuplicates(["mailboxid", "uid"])


def _failures_by_mailbox(failures: list[dict[str, Any]]) -> dict[str, list[dict[str, int]]]:
    by_mailbox: dict[str, list[int]] = {}
    for failure in failures:
        by_mailbox.setdefault(str(failure.get("mailboxid")), []).append(int(failure.get("uid") or 0))
    return {k: [{"uid": uid} for uid in sorted(v)] for k, v in sorted(by_mailbox.items())}


class ReindexRunner(ProcedureRunner):
    """Repairs a slice as one pipeline per partition (``reindex_pipeline``) instead of one item at a time."""

    def _repair_slice(self, slice_items: DataFrame, endpoint: CqlEndpoint, options: RunOptions,
                      parallel: int) -> SliceResult:
        from spark_apps.common.reindex_pipeline import reindex_partition
        from spark_apps.common.throttle import share

        procedure = self.procedure
        assert isinstance(procedure, ReindexMailboxes)
        rate = share(options.rate, parallel)
        outcomes = (procedure.with_sources(slice_items, parallel).rdd
                    .mapPartitions(lambda rows: reindex_partition(procedure, rate, rows, counters=COUNTERS,
                                                                  orphan_kind=ORPHAN))
                    .collect())
        result = SliceResult()
        counters: Counter[str] = Counter()
        for o in outcomes:
            if o["status"] == FIXED:
                counters[o["counter"]] += 1
                if len(result.fixed) < options.sample_size:
                    result.fixed.append(o["item"])
            elif o["status"] == FAILED:
                result.failures.append({**o["item"], "error": o["error"]})
            else:
                counters["skippedResolvedMeanwhile"] += 1
        result.counters = dict(counters)
        return result


def main(argv: Sequence[str] | None = None) -> int:
    return ReindexRunner(ReindexMailboxes()).main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
