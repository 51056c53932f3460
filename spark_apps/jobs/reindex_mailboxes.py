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
``--rate``/``--messages-per-second`` bounds the messages per second (James's ``messagesPerSecond``).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from spark_apps.common.bookkeeping import SliceResult
from spark_apps.common.cassandra_tables import read_table, user_mailbox_ids
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.mail_blobs import S3Access
from spark_apps.common.procedure import (
    FAILED,
    FIXED,
    SKIPPED,
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
BATCH = 200
FETCH_THREADS = 8   # per Python worker: messages of a batch read from Cassandra and S3 at once


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
        parser.add_argument("--blob-bucket", help="bucket of the message blobs [S3_DEFAULT_BUCKET, default 'default']")
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
        self.bucket = args.blob_bucket or os.environ.get("S3_DEFAULT_BUCKET") or DEFAULT_BLOB_BUCKET
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
        from opensearchpy import helpers

        from spark_apps.common.search_reindex import COMPARED_FIELDS, document_signature

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
        rows = [(hit["_source"]["mailboxId"], int(hit["_source"]["uid"]), document_signature(hit["_source"]))
                for hit in helpers.scan(client, index=self.search.read_alias, query={"query": query},
                                        _source=COMPARED_FIELDS, size=2000, preserve_order=False)]
        if self.failures is not None:
            rows = [r for r in rows if self.failures.covers(r[0], r[1])]
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
        from mailserver.search.document import document_id, routing_key
        from mailserver.search.index import bulk_index, run_bulk, write_targets
        from spark_apps.common.search_reindex import build_document, delete_actions, read_content

        assert self.search is not None and self.s3 is not None
        cql = endpoint.session()
        client = self.search.client()
        targets = write_targets(client, self.search.write_alias)
        outcomes: dict[str, Outcome] = {}
        documents: dict[str, dict[str, Any]] = {}
        orphans: dict[str, dict[str, Any]] = {}

        def fetch(item: dict[str, Any]) -> tuple[str, dict[str, Any] | Outcome | None]:
            """(key, the document, or the item's outcome, or None for an orphan to delete); one message."""
            key = document_id(item["mailboxid"], item["uid"])
            mailbox, uid = uuid.UUID(item["mailboxid"]), int(item["uid"])
            if item["kind"] == ORPHAN:
                if cql.execute("SELECT uid FROM messageidtable WHERE mailboxid = ? AND uid = ?", (mailbox, uid)):
                    return key, Outcome(SKIPPED, item)   # the message is there (a projection lagging): kept
                return key, None
            try:
                rows = cql.execute("SELECT * FROM imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?",
                                   (uuid.UUID(item["messageid"]), mailbox, uid))
                if not rows:
                    return key, Outcome(SKIPPED, item)   # expunged meanwhile: the listener removes it
                blobs = cql.execute("SELECT headercontent, bodycontent, internaldate, fullcontentoctets "
                                    "FROM messagev3 WHERE messageid = ?", (rows[0]["messageid"],))
                if not blobs or not blobs[0]["headercontent"] or not blobs[0]["bodycontent"]:
                    raise ValueError("no messageV3 row with blob ids: the content cannot be read")
                row = {**blobs[0], **{k: v for k, v in rows[0].items() if v is not None}}
                assert self.s3 is not None
                content = read_content(self.s3.client(), self.bucket, row["headercontent"], row["bodycontent"])
                return key, build_document(row, content, item.get("user"))
            except Exception as exc:   # one message must not stop the batch
                return key, Outcome(FAILED, item, error=f"{type(exc).__name__}: {exc}")

        # Cassandra and S3 reads overlap (the driver session and the boto3 client are thread-safe)
        with ThreadPoolExecutor(max_workers=FETCH_THREADS) as pool:
            fetched = list(pool.map(fetch, items))
        built: list[dict[str, Any]] = []
        for item, (key, result) in zip(items, fetched, strict=True):
            if isinstance(result, Outcome):
                outcomes[key] = result
            elif result is None:
                orphans[key] = item
            else:
                documents[key] = item
                built.append(result)
        if documents:
            report = bulk_index(client, built, targets=targets)
            for key, item in documents.items():
                if key in report.failures:
                    outcomes[key] = Outcome(FAILED, item, error=report.failures[key])
                else:
                    outcomes[key] = Outcome(FIXED, item, COUNTERS[item["kind"]])
        if orphans:
            report = run_bulk(client, delete_actions(targets, [(k, routing_key(i["mailboxid"]))
                                                               for k, i in orphans.items()]), ignore=("not_found",))
            for key, item in orphans.items():
                if key in report.failures:
                    outcomes[key] = Outcome(FAILED, item, error=report.failures[key])
                else:
                    outcomes[key] = Outcome(FIXED, item, COUNTERS[ORPHAN])
        return [outcomes[document_id(i["mailboxid"], i["uid"])] for i in items]


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
    """Repairs in batches (one ``_bulk`` per batch of a partition) instead of one item at a time."""

    def _repair_slice(self, slice_items: DataFrame, endpoint: CqlEndpoint, options: RunOptions,
                      parallel: int) -> SliceResult:
        from spark_apps.common.search_reindex import repair_in_batches
        from spark_apps.common.throttle import share

        procedure = self.procedure
        rate = share(options.rate, parallel)
        outcomes = (slice_items.repartition(parallel).rdd
                    .mapPartitions(lambda rows: repair_in_batches(procedure, endpoint, rate, rows, BATCH))
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
