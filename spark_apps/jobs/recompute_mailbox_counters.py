"""Recompute mailbox counters: ``mailboxCounters`` (count, unseen) from the messages of each mailbox.

James's ``recompute-mailbox-counters`` recomputes every mailbox one by one. Here Spark finds the
mailboxes whose counters are wrong first, and only those are recomputed:

* detection: for every mailbox of the ``mailbox`` table, count its ``messageIdTable`` rows and
  the unseen ones; unless ``--trust-message-projection``, a row counts only when
  ``imapUidTable`` (the truth) has it at the same (messageId, mailboxId, uid), and its
  ``\\Seen`` flag is the truth's. A mailbox whose stored counters (missing = 0/0) differ is an
  ``outdatedMailboxCounters`` item;
* repair, per mailbox: the target is recomputed at repair time from the mailbox's
  ``messageIdTable`` partition (each row re-read in ``imapUidTable`` at SERIAL consistency
  unless trusting the projection), the stored counters are read, and (target - stored) is
  applied as one counter UPDATE. A counter is never INSERTed (Cassandra cannot overwrite one);
  James applies the same difference as two UPDATEs (minus the stored, plus the computed).

Not concurrency-safe (James's words): an append, flag change or expunge of that mailbox between
the recomputation and the UPDATE is lost; re-running converges (ADR 0023), and an offline run is
advised. Report: James's ``processedMailboxes`` (mailboxes checked and, when wrong, corrected)
and ``failedMailboxes`` (ids), plus the framework's fields.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import as_uuid, read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OUTDATED = "outdatedMailboxCounters"
RECOMPUTED = "recomputedMailboxes"
ROW_CHECKS_IN_FLIGHT = 8   # James re-reads 8 messages of a mailbox at a time


def expected_counters(mailboxes: DataFrame, message_id: DataFrame, imap_uid: DataFrame | None) -> DataFrame:
    """Pure: (mailboxid, count, unseen) of every mailbox, from the message tables.

    ``imap_uid`` None trusts the projection; otherwise a projection row counts only when the
    truth has it at the same (messageid, mailboxid, uid), with the truth's seen flag.
    """
    from pyspark.sql import functions as F

    rows = message_id.filter(F.col("messageid").isNotNull())   # a partial write: James drops it on read
    if imap_uid is not None:
        rows = (rows.select("mailboxid", "uid", "messageid")
                .join(imap_uid.select("mailboxid", "uid", "messageid", "flagseen"), ["mailboxid", "uid", "messageid"]))
    computed = rows.groupBy("mailboxid").agg(
        F.count(F.lit(1)).alias("count"),
        F.sum(F.when(F.coalesce(F.col("flagseen"), F.lit(False)), 0).otherwise(1)).alias("unseen"))
    return (mailboxes.select("mailboxid").distinct().join(computed, "mailboxid", "left")
            .select("mailboxid", F.coalesce("count", F.lit(0)).cast("long").alias("count"),
                    F.coalesce("unseen", F.lit(0)).cast("long").alias("unseen")))


def counter_inconsistencies(expected: DataFrame, stored: DataFrame) -> DataFrame:
    """Pure: (kind, mailboxid) of the mailboxes whose stored counters (missing = 0/0) differ."""
    from pyspark.sql import functions as F

    current = stored.select("mailboxid", F.col("count").alias("stored_count"), F.col("unseen").alias("stored_unseen"))
    both = expected.join(current, "mailboxid", "left")
    wrong = ((F.col("count") != F.coalesce("stored_count", F.lit(0)))
             | (F.col("unseen") != F.coalesce("stored_unseen", F.lit(0))))
    return both.filter(wrong).select(F.lit(OUTDATED).alias("kind"), "mailboxid")


class RecomputeMailboxCounters(Procedure):
    job = "recompute-mailbox-counters"
    slice_columns = ("mailboxid",)

    def __init__(self) -> None:
        self.trust_message_projection = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--trust-message-projection", action="store_true",
                            help="count messageIdTable rows as they are, without checking each in imapUidTable")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        self.trust_message_projection = bool(args.trust_message_projection)
        return {"trustMessageProjection": self.trust_message_projection}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        from pyspark.sql import functions as F

        mailboxes = read_table(spark, settings, "mailbox", ["id"]).select(F.col("id").alias("mailboxid")).cache()
        message_id = read_table(spark, settings, "messageidtable", ["mailboxid", "uid", "messageid", "flagseen"])
        imap_uid = (None if self.trust_message_projection else
                    read_table(spark, settings, "imapuidtable", ["mailboxid", "uid", "messageid", "flagseen"]))
        stored = read_table(spark, settings, "mailboxcounters", ["mailboxid", "count", "unseen"])
        items = counter_inconsistencies(expected_counters(mailboxes, message_id, imap_uid), stored)
        return Detection(items, {"processedMailboxes": mailboxes.count()})

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        failed = sorted({f["mailboxid"] for f in result.failures})
        return {"processedMailboxes": detection.processed["processedMailboxes"] - len(failed),
                "failedMailboxes": failed, RECOMPUTED: 0, **result.counters}

    def _target(self, cql: Any, mailbox_id: Any) -> tuple[int, int]:
        rows = [r for r in cql.execute("SELECT uid, messageid, flagseen FROM messageidtable WHERE mailboxid = ?",
                                       (mailbox_id,)) if r["messageid"] is not None]
        if self.trust_message_projection:
            seen = [r["flagseen"] for r in rows]
        else:
            truths = cql.serial_read_many(
                "SELECT flagseen FROM imapuidtable WHERE messageid = ? AND mailboxid = ? AND uid = ?",
                [(r["messageid"], mailbox_id, r["uid"]) for r in rows], concurrency=ROW_CHECKS_IN_FLIGHT)
            seen = [t[0]["flagseen"] for t in truths if t]   # a row the truth lacks is not counted
        return len(seen), sum(1 for s in seen if not s)

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        mailbox_id = as_uuid(item["mailboxid"])
        if not cql.serial_read("SELECT id FROM mailbox WHERE id = ?", (mailbox_id,)):
            return Outcome(SKIPPED, item)   # deleted meanwhile: do not bring its counters back
        count, unseen = self._target(cql, mailbox_id)
        stored = cql.execute("SELECT count, unseen FROM mailboxcounters WHERE mailboxid = ?", (mailbox_id,))
        current = (stored[0]["count"] or 0, stored[0]["unseen"] or 0) if stored else (0, 0)
        if (count, unseen) == current:
            return Outcome(SKIPPED, item)
        cql.execute("UPDATE mailboxcounters SET count = count + ?, unseen = unseen + ? WHERE mailboxid = ?",
                    (count - current[0], unseen - current[1], mailbox_id))
        return Outcome(FIXED, {**item, "count": count, "unseen": unseen,
                               "previousCount": current[0], "previousUnseen": current[1]}, RECOMPUTED)


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(RecomputeMailboxCounters(), argv)


if __name__ == "__main__":
    sys.exit(main())
