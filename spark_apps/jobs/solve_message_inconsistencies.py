"""Solve message inconsistencies: ``imapUidTable`` is the truth, ``messageIdTable`` its projection.

James's ``solve-message-inconsistencies`` (ADR 0022), as one Spark pass instead of two
throttled row-by-row scans: both tables are read through the connector and joined.

* ``orphanMessageIdEntry``: a messageIdTable row whose (messageId, mailboxId) has no
  imapUidTable row at any uid -> the projection row is deleted (``removedMessageIdEntries``);
* ``orphanImapUidEntry``: an imapUidTable row with no messageIdTable row at its (mailboxId, uid)
  -> the projection row is written from the truth (``addedMessageIdEntries``);
* ``outdatedMessageIdEntry``: both rows exist and differ (message id, flags, modseq, thread,
  dates, sizes, header blob) -> the projection row is rewritten from the truth
  (``updatedMessageIdEntries``). James only adds the missing flags and the modseq here, which
  can leave a row that still differs; we rewrite the whole row (docs/compatibility.md).

Every fix re-reads both rows at SERIAL consistency first and does nothing when the
inconsistency is gone. imapUidTable is never written, so the procedure is safe online and a
re-run converges. Scope: everything, one user (``--user``) or mailboxes (``--mailbox-id``).

Detection is one pass over both tables (``docs/benchmarks.md``): each side reads the compared columns
only and reduces them to a digest before the shuffle, the two sides meet in one full outer join on
(mailboxId, uid), hashed rather than sorted, and only the rows that may be inconsistent are kept
(cached; never the tables; the row counts of the report are observed on the scans as they stream).
The one check that needs more than a row's own pair, whether an orphan candidate's (messageId,
mailboxId) is in the truth at another uid, looks the candidates up in imapUidTable by partition key
(the connector's direct join) instead of scanning the truth again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import (
    MESSAGE_METADATA_COLUMNS,
    as_uuid,
    read_table,
    user_mailbox_ids,
)
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ORPHAN_MESSAGE_ID = "orphanMessageIdEntry"
ORPHAN_IMAP_UID = "orphanImapUidEntry"
OUTDATED_MESSAGE_ID = "outdatedMessageIdEntry"
COMPARED_COLUMNS = ("messageid", *MESSAGE_METADATA_COLUMNS)
REQUIRED_FOR_PROJECTION = ("internaldate", "bodystartoctet", "fullcontentoctets", "headercontent")
ITEM_COLUMNS = ("kind", "mailboxid", "uid", "messageid")


# The orphan check looks the candidates' (messageId, mailboxId) up in imapUidTable by partition key (the
# connector's direct join): a handful of reads where a table scan would be a second pass over the truth.
DIRECT_JOIN = {"directJoinSetting": "on", "spark.cassandra.concurrent.reads": "64"}


def _digested(df: DataFrame, prefix: str) -> DataFrame:
    """(mailboxid, uid, <prefix>messageid, <prefix>row, <prefix>digest): the compared columns reduced to two
    independent hashes (96 bits) of their normalised values and of which of them are null, so that the
    join shuffles a few columns instead of all. User flags are sorted and a missing set equals an empty
    one (Cassandra stores both as null)."""
    from pyspark.sql import functions as F

    values = []
    for c in COMPARED_COLUMNS[1:]:
        if c == "userflags":
            # sort_array, not array_sort: the latter is a lambda evaluated row by row outside the generated code
            values.append(F.coalesce(F.sort_array(F.col(c)), F.array().cast("array<string>")))
        else:
            values += [F.col(c), F.col(c).isNull()]
    digest = F.struct(F.xxhash64(*values).alias("x"), F.hash(*values).alias("m"))
    return df.select("mailboxid", "uid", F.col("messageid").alias(prefix + "messageid"),
                     F.lit(True).alias(prefix + "row"), digest.alias(prefix + "digest"))


def classified(imap_uid: DataFrame, message_id: DataFrame) -> DataFrame:
    """Pure: one row per (mailboxid, uid) in either table, with both message ids, which table has a row
    (``t_row``, ``p_row``: true or null) and whether the two rows differ in a compared column."""
    from pyspark.sql import functions as F

    # Hashed, not sorted: each side is unique on the key, and sorting a million rows a side only to merge
    # them took longer than hashing one side's narrow digest rows, a quarter of them a partition.
    joined = (_digested(imap_uid, "t_").hint("shuffle_hash")
              .join(_digested(message_id, "p_"), ["mailboxid", "uid"], "full_outer"))
    differs = ~F.col("t_messageid").eqNullSafe(F.col("p_messageid")) | (F.col("t_digest") != F.col("p_digest"))
    return joined.select("mailboxid", "uid", "t_messageid", "p_messageid", "t_row", "p_row",
                         (F.col("t_row") & F.col("p_row") & differs).alias("differs"))


def orphan_candidate() -> Column:
    """A projection row whose message is not at its (mailboxid, uid) in the truth: an orphan unless the
    truth has that (messageId, mailboxId) at another uid (James's rule)."""
    from pyspark.sql import functions as F

    return F.col("p_row") & (F.col("t_row").isNull() | ~F.col("t_messageid").eqNullSafe(F.col("p_messageid")))


def flagged() -> Column:
    """The ``classified`` rows that may yield an item: a missing or outdated projection, an orphan candidate."""
    from pyspark.sql import functions as F

    return (F.col("t_row") & F.col("p_row").isNull()) | F.col("differs") | orphan_candidate()


def inconsistencies(rows: DataFrame, truth: DataFrame) -> DataFrame:
    """Pure on ``classified`` rows: the items (kind, mailboxid, uid, messageid). ``truth``: imapUidTable's
    (messageid, mailboxid, uid), looked up for the orphan candidates only (in the job, the table itself,
    which the connector turns into lookups by partition key)."""
    from pyspark.sql import functions as F

    missing = (rows.filter(F.col("t_row") & F.col("p_row").isNull())
               .select(F.lit(ORPHAN_IMAP_UID).alias("kind"), "mailboxid", "uid",
                       F.col("t_messageid").alias("messageid")))
    outdated = (rows.filter(F.col("differs"))
                .select(F.lit(OUTDATED_MESSAGE_ID).alias("kind"), "mailboxid", "uid",
                        F.col("t_messageid").alias("messageid")))
    candidates = rows.filter(orphan_candidate()).select("mailboxid", "uid", F.col("p_messageid").alias("messageid"))
    # A left outer join gives a candidate one row with no truth uid exactly when the truth has its
    # (messageId, mailboxId) nowhere: no distinct, no broadcast, no job of its own.
    keys = ["messageid", "mailboxid"]
    anywhere = truth.select(*keys, F.col("uid").alias("truth_uid"))
    orphans = (candidates.join(anywhere, keys, "left").filter(F.col("truth_uid").isNull())
               .select(F.lit(ORPHAN_MESSAGE_ID).alias("kind"), "mailboxid", "uid", "messageid"))
    return orphans.unionByName(missing).unionByName(outdated)


def message_inconsistencies(imap_uid: DataFrame, message_id: DataFrame) -> DataFrame:
    """Pure: the inconsistent items (kind, mailboxid, uid, messageid) between the two tables."""
    return inconsistencies(classified(imap_uid, message_id), imap_uid)


def _observed(observation: Any, table: DataFrame) -> int:
    """The rows an observed scan counted; counted again (keys only) if Spark delivered no metrics."""
    rows = observation.get.get("rows")
    return int(rows) if rows is not None else table.count()


def _same_row(truth: dict[str, Any], projection: dict[str, Any]) -> bool:
    def norm(row: dict[str, Any], col: str) -> Any:
        value = row.get(col)
        return frozenset(value or ()) if col == "userflags" else value

    return all(norm(truth, c) == norm(projection, c) for c in COMPARED_COLUMNS)


class SolveMessageInconsistencies(Procedure):
    job = "solve-message-inconsistencies"
    slice_columns = ("mailboxid",)

    def __init__(self) -> None:
        self.user: str | None = None
        self.mailbox_ids: tuple[str, ...] = ()
        self._kept: DataFrame | None = None   # the driver's cache of the last detection

    def __getstate__(self) -> dict[str, Any]:
        """What executors get (the repairs): the options, never the driver's DataFrame."""
        return {**self.__dict__, "_kept": None}

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--user", help="only the mailboxes of this user")
        scope.add_argument("--mailbox-id", action="append", default=[], help="only this mailbox (repeatable)")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        for value in args.mailbox_id:
            as_uuid(value)   # a clear error now rather than an empty scan
        self.user = args.user.lower() if args.user else None
        self.mailbox_ids = tuple(args.mailbox_id)
        options: dict[str, Any] = {"messagesPerSecond": args.rate}
        if self.user:
            options["user"] = self.user
        if self.mailbox_ids:
            options["mailboxIds"] = list(self.mailbox_ids)
        return options

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        columns = ["mailboxid", "uid", *COMPARED_COLUMNS]
        imap_uid = read_table(spark, settings, "imapuidtable", columns)
        message_id = read_table(spark, settings, "messageidtable", columns)
        scope = list(self.mailbox_ids) or (user_mailbox_ids(spark, settings, self.user) if self.user else None)
        if scope is not None:
            imap_uid = imap_uid.filter(F.col("mailboxid").isin(scope))
            message_id = message_id.filter(F.col("mailboxid").isin(scope))   # partition key: pushed down
        # One pass over Cassandra: both scans counted as they stream (observed metrics), reduced to digests,
        # joined; only the flagged rows are kept.
        # The verifying detection must read Cassandra again: an equivalent plan would be served from the first
        # detection's cache (stale, and without observed metrics).
        if self._kept is not None:
            self._kept.unpersist()
        truth_seen, projection_seen = Observation(), Observation()
        rows = classified(imap_uid.observe(truth_seen, F.count(F.lit(1)).alias("rows")),
                          message_id.observe(projection_seen, F.count(F.lit(1)).alias("rows")))
        self._kept = kept = rows.filter(flagged()).cache()
        kept.count()
        processed = {"processedImapUidEntries": _observed(truth_seen, imap_uid),
                     "processedMessageIdEntries": _observed(projection_seen, message_id)}
        truth = read_table(spark, settings, "imapuidtable", ["messageid", "mailboxid", "uid"], DIRECT_JOIN)
        return Detection(inconsistencies(kept, truth), processed)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        counters = {"addedMessageIdEntries": 0, "updatedMessageIdEntries": 0, "removedMessageIdEntries": 0}
        counters.update(result.counters)
        return {**detection.processed, **counters}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        mailbox_id, uid, message_id = as_uuid(item["mailboxid"]), item["uid"], as_uuid(item["messageid"])
        projection = cql.serial_read("SELECT * FROM messageidtable WHERE mailboxid = ? AND uid = ?", (mailbox_id, uid))
        if item["kind"] == ORPHAN_MESSAGE_ID:
            truth = cql.serial_read("SELECT uid FROM imapuidtable WHERE messageid = ? AND mailboxid = ?",
                                    (message_id, mailbox_id))
            if truth or not projection or projection[0]["messageid"] != message_id:
                return Outcome(SKIPPED, item)
            cql.execute("DELETE FROM messageidtable WHERE mailboxid = ? AND uid = ?", (mailbox_id, uid))
            return Outcome(FIXED, item, "removedMessageIdEntries")

        truth = cql.serial_read("SELECT * FROM imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?",
                                (message_id, mailbox_id, uid))
        if not truth or (projection and _same_row(truth[0], projection[0])):
            return Outcome(SKIPPED, item)
        row = truth[0]
        missing = [c for c in REQUIRED_FOR_PROJECTION if row.get(c) is None]
        if missing:
            raise ValueError(f"imapUidTable row has incomplete metadata (null {', '.join(missing)}): "
                             "run the 10 -> 11 denormalization migration first")
        columns = ["mailboxid", "uid", *COMPARED_COLUMNS]
        cql.execute(f"INSERT INTO messageidtable ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                    [row.get(c) for c in columns])
        return Outcome(FIXED, item, "updatedMessageIdEntries" if projection else "addedMessageIdEntries")


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(SolveMessageInconsistencies(), argv)


if __name__ == "__main__":
    sys.exit(main())
