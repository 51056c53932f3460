"""Detection of message inconsistencies on tiny local DataFrames shaped as the connector reads them."""

from __future__ import annotations

import uuid
from datetime import datetime

import pytest

from spark_apps.jobs.solve_message_inconsistencies import (
    ORPHAN_IMAP_UID,
    ORPHAN_MESSAGE_ID,
    OUTDATED_MESSAGE_ID,
    _same_row,
    message_inconsistencies,
)

pytestmark = pytest.mark.spark

SCHEMA = ("mailboxid string, uid long, messageid string, threadid string, modseq long, flaganswered boolean, "
          "flagdeleted boolean, flagdraft boolean, flagflagged boolean, flagrecent boolean, flagseen boolean, "
          "flaguser boolean, userflags array<string>, internaldate timestamp, save_date timestamp, "
          "bodystartoctet int, fullcontentoctets long, headercontent string")
MBX = str(uuid.uuid1())
WHEN = datetime(2026, 1, 2, 3, 4, 5)


def row(uid: int, message_id: str, *, seen: bool = False, modseq: int = 1, flags: list[str] | None = None):
    return (MBX, uid, message_id, message_id, modseq, False, False, False, False, False, seen, False, flags,
            WHEN, WHEN, 120, 1000, "header-blob")


def detect(spark, truth, projection):
    found = message_inconsistencies(spark.createDataFrame(truth, SCHEMA), spark.createDataFrame(projection, SCHEMA))
    return sorted((r.kind, r.uid) for r in found.collect())


def test_consistent_tables_yield_nothing(spark):
    rows = [row(1, "m1", flags=["b", "a"]), row(2, "m2")]
    same_flags_other_order = [row(1, "m1", flags=["a", "b"]), row(2, "m2", flags=[])]
    assert detect(spark, rows, same_flags_other_order) == []


def test_each_kind_is_detected(spark):
    truth = [row(1, "m1"), row(2, "m2", seen=True), row(3, "m3")]
    projection = [row(1, "m1"), row(2, "m2", seen=False), row(9, "orphan")]
    assert detect(spark, truth, projection) == [(ORPHAN_IMAP_UID, 3), (ORPHAN_MESSAGE_ID, 9), (OUTDATED_MESSAGE_ID, 2)]


def test_a_projection_row_is_not_orphan_when_the_truth_has_the_message_at_another_uid(spark):
    # James's rule: any imapUid row for (messageId, mailboxId), whatever its uid, makes it consistent.
    found = detect(spark, [row(5, "m1")], [row(4, "m1"), row(5, "m1")])
    assert found == []


def test_modseq_user_flags_and_message_id_differences_are_outdated(spark):
    truth = [row(1, "m1", modseq=7), row(2, "m2", flags=["x"]), row(3, "m3")]
    projection = [row(1, "m1", modseq=6), row(2, "m2"), row(3, "other")]
    kinds = detect(spark, truth, projection)
    assert (OUTDATED_MESSAGE_ID, 1) in kinds and (OUTDATED_MESSAGE_ID, 2) in kinds
    assert (OUTDATED_MESSAGE_ID, 3) in kinds


def test_same_row_treats_missing_user_flags_as_empty():
    base = {"messageid": "m", "userflags": None, "modseq": 1}
    assert _same_row(base, {**base, "userflags": set()})
    assert not _same_row(base, {**base, "userflags": {"x"}})
    assert not _same_row(base, {**base, "modseq": 2})
