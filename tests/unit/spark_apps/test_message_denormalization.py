"""The 10 -> 11 migration's detection by internal-date range, on tiny DataFrames shaped as the connector reads them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from spark_apps.common.procedure import ProcedureRunner
from spark_apps.jobs.migrate_message_denormalization import (
    INCOMPLETE_IMAP_UID,
    INCOMPLETE_MESSAGE_ID,
    MigrateMessageDenormalization,
    epoch_micros,
    incomplete_rows,
    parse_instant,
)

pytestmark = pytest.mark.spark

TABLE = ("mailboxid string, uid long, messageid string, internaldate timestamp, bodystartoctet int, "
         "fullcontentoctets long, headercontent string")
MESSAGES = "messageid string, internaldate timestamp"
MBX = "mbx"
JAN, FEB, MAR = (datetime(2023, m, 1, tzinfo=UTC) for m in (1, 2, 3))


def old(uid: int, mid: str | None, date: datetime | None = None):
    """A row as James 3.7 left it: no metadata, except an optional date."""
    return (MBX, uid, mid, date, None, None, None)


def complete(uid: int, mid: str, date: datetime):
    return (MBX, uid, mid, date, 120, 1000, "header")


def items(spark, message_id, imap_uid, messages, start=None, end=None) -> list[tuple[str, int]]:
    found = incomplete_rows(spark.createDataFrame(message_id, TABLE), spark.createDataFrame(imap_uid, TABLE),
                            spark.createDataFrame(messages, MESSAGES), epoch_micros(start), epoch_micros(end))
    return sorted((r.kind, r.uid) for r in found.collect())


@pytest.fixture(scope="module")
def keyspace():
    """Both tables with: Jan (uid 1), Feb (2), Feb half done (3), complete Jan (4), orphan (5),
    a message known by its row's date only (6, March), a messageIdTable partial write (7)."""
    messages = [("jan", JAN + timedelta(days=14)), ("feb", FEB), ("feb2", FEB + timedelta(days=19)),
                ("done", JAN + timedelta(days=1)), ("undated", None)]
    rows = [old(1, "jan"), old(2, "feb"), old(3, "feb2", FEB + timedelta(days=19)),
            complete(4, "done", JAN + timedelta(days=1)), old(5, "orphan"), old(6, "undated", MAR)]
    return [*rows, old(7, None)], rows, messages


def both(*uids: int) -> list[tuple[str, int]]:
    return sorted([(INCOMPLETE_MESSAGE_ID, u) for u in uids] + [(INCOMPLETE_IMAP_UID, u) for u in uids])


def test_without_a_range_every_incomplete_row_with_a_message_id_is_an_item(spark, keyspace):
    assert items(spark, *keyspace) == both(1, 2, 3, 5, 6)


def test_a_slice_holds_its_months_messages_and_the_orphans(spark, keyspace):
    assert items(spark, *keyspace, JAN, FEB) == both(1, 5)
    assert items(spark, *keyspace, FEB, MAR) == both(2, 3, 5)            # Feb 1st 00:00 belongs to February
    assert items(spark, *keyspace, MAR, MAR + timedelta(days=31)) == both(5, 6)   # the row's own date
    assert items(spark, *keyspace, datetime(2022, 1, 1, tzinfo=UTC), JAN) == both(5)


def test_open_ended_ranges(spark, keyspace):
    assert items(spark, *keyspace, FEB, None) == both(2, 3, 5, 6)
    assert items(spark, *keyspace, None, FEB) == both(1, 5)


def test_a_message_without_any_date_belongs_to_no_bounded_slice(spark):
    rows = [old(1, "nodate")]
    messages = [("nodate", None)]
    assert items(spark, rows, rows, messages, JAN, MAR) == []
    assert items(spark, rows, rows, messages) == both(1)


def test_tables_are_judged_row_by_row(spark):
    # The projection was completed already, the truth was not: only the truth is an item.
    messages = [("m", JAN)]
    assert items(spark, [complete(1, "m", JAN)], [old(1, "m")], messages, JAN, FEB) == [(INCOMPLETE_IMAP_UID, 1)]


def test_bounds_are_instants_whatever_the_offset():
    assert parse_instant("2023-02-01") == FEB
    assert parse_instant("2023-02-01T01:00:00+01:00") == FEB
    assert parse_instant("2023-02-01T00:00:00Z") == FEB
    assert parse_instant(datetime(2023, 2, 1, 1, tzinfo=timezone(timedelta(hours=1))).isoformat()) == FEB
    assert parse_instant(None) is None and parse_instant("") is None
    assert epoch_micros(datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=UTC)) == 1_000_005


def test_a_range_must_not_be_empty():
    runner = ProcedureRunner(MigrateMessageDenormalization())
    with pytest.raises(SystemExit) as refused:
        runner.parse(["--from", "2023-02-01", "--to", "2023-01-01"])
    assert refused.value.code == 2

    _, _, _, options = runner.parse(["--from", "2023-01-01", "--to", "2023-02-01T00:00:00+00:00"])
    assert options["internalDateFrom"] == JAN.isoformat() and options["internalDateTo"] == FEB.isoformat()
