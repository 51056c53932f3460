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


def _normalised(df: DataFrame, prefix: str) -> DataFrame:
    """Comparable columns: user flags sorted, a missing set equal to an empty one (Cassandra stores both as null)."""
    from pyspark.sql import functions as F

    cols = [F.col(c).alias(prefix + c) for c in COMPARED_COLUMNS if c != "userflags"]
    flags = F.coalesce(F.array_sort(F.col("userflags")), F.array().cast("array<string>")).alias(prefix + "userflags")
    return df.select(F.col("mailboxid"), F.col("uid"), *cols, flags)


def _differs(left: str, right: str) -> Column:
    from functools import reduce

    from pyspark.sql import functions as F

    equal = [F.col(left + c).eqNullSafe(F.col(right + c)) for c in COMPARED_COLUMNS]
    return ~reduce(lambda a, b: a & b, equal)


def message_inconsistencies(imap_uid: DataFrame, message_id: DataFrame) -> DataFrame:
    """Pure: the inconsistent items (kind, mailboxid, uid, messageid) between the two tables."""
    from pyspark.sql import functions as F

    truth_pairs = imap_uid.select("messageid", "mailboxid").distinct()
    orphan_projection = (message_id.join(truth_pairs, ["messageid", "mailboxid"], "left_anti")
                         .select(F.lit(ORPHAN_MESSAGE_ID).alias("kind"), "mailboxid", "uid", "messageid"))
    missing_projection = (imap_uid.join(message_id.select("mailboxid", "uid"), ["mailboxid", "uid"], "left_anti")
                          .select(F.lit(ORPHAN_IMAP_UID).alias("kind"), "mailboxid", "uid", "messageid"))
    both = _normalised(imap_uid, "t_").join(_normalised(message_id, "p_"), ["mailboxid", "uid"])
    outdated = (both.filter(_differs("t_", "p_"))
                .select(F.lit(OUTDATED_MESSAGE_ID).alias("kind"), "mailboxid", "uid",
                        F.col("t_messageid").alias("messageid")))
    return orphan_projection.unionByName(missing_projection).unionByName(outdated)


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
        from pyspark.sql import functions as F

        columns = ["mailboxid", "uid", *COMPARED_COLUMNS]
        imap_uid = read_table(spark, settings, "imapuidtable", columns)
        message_id = read_table(spark, settings, "messageidtable", columns)
        scope = list(self.mailbox_ids) or (user_mailbox_ids(spark, settings, self.user) if self.user else None)
        if scope is not None:
            imap_uid = imap_uid.filter(F.col("mailboxid").isin(scope))
            message_id = message_id.filter(F.col("mailboxid").isin(scope))   # partition key: pushed down
        imap_uid, message_id = imap_uid.cache(), message_id.cache()
        processed = {"processedImapUidEntries": imap_uid.count(), "processedMessageIdEntries": message_id.count()}
        return Detection(message_inconsistencies(imap_uid, message_id), processed)

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
