"""Schema migration 10 -> 11 (James's MessageDenormalizationMigration) over an internal-date range.

A keyspace written by James 3.7 has ``messageIdTable`` and ``imapUidTable`` rows without the
message metadata later releases denormalized into them (internalDate, bodyStartOctet,
fullContentOctets, headerContent). This job fills what is missing from ``messageV3``, for the
messages whose internal date is in ``[--from, --to)`` only, so an Airflow backfill migrates one
month (or any slice) per run. Without a range it covers everything: that full run is the final
check before the version is bumped.

* detect: both tables and ``messageV3`` through the connector; incomplete rows joined to their
  message, kept when the message's internal date (or, without one, the row's own) is in the
  range. A row whose ``messageV3`` row is missing is in every slice, as in the Python
  migration: it cannot be fixed and makes the run PARTIAL until its message is restored.
* repair: re-read the row at SERIAL consistency, fill only the null columns (values already
  there are kept), with the same conditional updates as the Python migration
  (``IF messageId = ?`` on messageIdTable, so an expunged row is not resurrected as a partial
  one; ``IF EXISTS`` on imapUidTable).
* verify: detection again over the same range.

Counters keep the Python migration's names (``processed``, ``fixed_message_id``,
``fixed_imap_uid``; failures are the report's ``errors`` list). This job never writes the
schema version: the DAG bumps it after a complete full-range run.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import as_uuid, read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

INCOMPLETE_MESSAGE_ID = "incompleteMessageIdEntry"
INCOMPLETE_IMAP_UID = "incompleteImapUidEntry"
COLUMNS = ("internaldate", "bodystartoctet", "fullcontentoctets", "headercontent")
ITEM_COLUMNS = ("kind", "mailboxid", "uid", "messageid")
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

_SET = ", ".join(f"{c} = ?" for c in COLUMNS)
SELECT_MESSAGE_ID = f"SELECT messageid, {', '.join(COLUMNS)} FROM messageidtable WHERE mailboxid = ? AND uid = ?"
SELECT_IMAP_UID = (f"SELECT messageid, {', '.join(COLUMNS)} FROM imapuidtable "
                   "WHERE messageid = ? AND mailboxid = ? AND uid = ?")
SELECT_MESSAGE = f"SELECT {', '.join(COLUMNS)} FROM messagev3 WHERE messageid = ?"
UPDATE_MESSAGE_ID = f"UPDATE messageidtable SET {_SET} WHERE mailboxid = ? AND uid = ? IF messageid = ?"
UPDATE_IMAP_UID = f"UPDATE imapuidtable SET {_SET} WHERE messageid = ? AND mailboxid = ? AND uid = ? IF EXISTS"


def parse_instant(value: str | None) -> datetime | None:
    """An ISO date or date-time; naive values are UTC (Airflow passes offsets, operators often do not)."""
    if value is None or value == "":
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def epoch_micros(value: datetime | None) -> int | None:
    """Bounds compared as epoch microseconds: independent of the Spark session's time zone."""
    if value is None:
        return None
    return (value - EPOCH) // timedelta(microseconds=1)


def _incomplete() -> Column:
    from functools import reduce

    from pyspark.sql import functions as F

    missing = reduce(lambda a, b: a | b, [F.col(c).isNull() for c in COLUMNS])
    # A messageIdTable row without messageId is a partial write James ignores: not ours to fix.
    return F.col("messageid").isNotNull() & missing


def in_range(date: Column, start_micros: int | None, end_micros: int | None) -> Column:
    """[start, end); an unknown date belongs to no bounded slice (the full run reports it)."""
    from pyspark.sql import functions as F

    if start_micros is None and end_micros is None:
        return F.lit(True)
    micros = F.unix_micros(date)
    condition = micros.isNotNull()
    if start_micros is not None:
        condition = condition & (micros >= F.lit(start_micros))
    if end_micros is not None:
        condition = condition & (micros < F.lit(end_micros))
    return condition


def incomplete_rows(message_id: DataFrame, imap_uid: DataFrame, message_v3: DataFrame,
                    start_micros: int | None = None, end_micros: int | None = None) -> DataFrame:
    """Pure: the incomplete rows of both tables (kind, mailboxid, uid, messageid) in the date range.

    ``message_v3`` needs ``messageid`` and ``internaldate``; the two tables need the item columns
    and the four denormalized ones.
    """
    from pyspark.sql import functions as F

    def candidates(df: DataFrame, kind: str) -> DataFrame:
        return df.filter(_incomplete()).select(F.lit(kind).alias("kind"), "mailboxid", "uid", "messageid",
                                                 F.col("internaldate").alias("row_date"))

    rows = candidates(message_id, INCOMPLETE_MESSAGE_ID).unionByName(candidates(imap_uid, INCOMPLETE_IMAP_UID))
    sources = message_v3.select("messageid", F.col("internaldate").alias("source_date"), F.lit(True).alias("known"))
    joined = rows.join(sources, "messageid", "left")
    orphan = F.col("known").isNull()   # no messageV3 row: cannot be fixed, reported by every slice
    date = F.coalesce(F.col("source_date"), F.col("row_date"))
    return joined.filter(orphan | in_range(date, start_micros, end_micros)).select(*ITEM_COLUMNS)


class MigrateMessageDenormalization(Procedure):
    job = "message-denormalization-migration"
    slice_columns = ("messageid",)

    def __init__(self) -> None:
        self.start: datetime | None = None
        self.end: datetime | None = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("internal-date range (default: everything)")
        g.add_argument("--from", dest="internal_date_from", help="first internal date of the slice (inclusive, ISO)")
        g.add_argument("--to", dest="internal_date_to", help="end of the slice (exclusive, ISO)")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        self.start, self.end = parse_instant(args.internal_date_from), parse_instant(args.internal_date_to)
        if self.start and self.end and self.start >= self.end:
            raise ValueError(f"--from ({self.start.isoformat()}) must be before --to ({self.end.isoformat()})")
        return {"fromVersion": 10, "toVersion": 11, "messagesPerSecond": args.rate,
                "internalDateFrom": self.start.isoformat() if self.start else None,
                "internalDateTo": self.end.isoformat() if self.end else None}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        key_columns = ["mailboxid", "uid", "messageid", *COLUMNS]
        message_id = read_table(spark, settings, "messageidtable", key_columns)
        imap_uid = read_table(spark, settings, "imapuidtable", key_columns)
        message_v3 = read_table(spark, settings, "messagev3", ["messageid", "internaldate"])
        items = incomplete_rows(message_id, imap_uid, message_v3,
                                epoch_micros(self.start), epoch_micros(self.end)).cache()
        return Detection(items, {"processed": items.count()})

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        counters = {"fixed_message_id": 0, "fixed_imap_uid": 0}
        counters.update(result.counters)
        return {**detection.processed, **counters}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        mailbox_id, uid, message_id = as_uuid(item["mailboxid"]), item["uid"], as_uuid(item["messageid"])
        if item["kind"] == INCOMPLETE_MESSAGE_ID:
            rows = cql.serial_read(SELECT_MESSAGE_ID, (mailbox_id, uid))
        else:
            rows = cql.serial_read(SELECT_IMAP_UID, (message_id, mailbox_id, uid))
        row = rows[0] if rows else None
        if row is None or row["messageid"] != message_id or all(row[c] is not None for c in COLUMNS):
            return Outcome(SKIPPED, item)   # expunged, replaced or completed meanwhile
        sources = cql.execute(SELECT_MESSAGE, (message_id,))
        if not sources:
            raise ValueError("its messageV3 row is missing")
        values = [row[c] if row[c] is not None else sources[0][c] for c in COLUMNS]
        lacking = [c for c, v in zip(COLUMNS, values, strict=True) if v is None]
        if lacking:
            raise ValueError(f"messageV3 lacks {', '.join(lacking)}")
        if item["kind"] == INCOMPLETE_MESSAGE_ID:
            applied = cql.lwt(UPDATE_MESSAGE_ID, (*values, mailbox_id, uid, message_id))
            counter = "fixed_message_id"
        else:
            applied = cql.lwt(UPDATE_IMAP_UID, (*values, message_id, mailbox_id, uid))
            counter = "fixed_imap_uid"
        return Outcome(FIXED, item, counter) if applied else Outcome(SKIPPED, item)


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(MigrateMessageDenormalization(), argv)


if __name__ == "__main__":
    sys.exit(main())
