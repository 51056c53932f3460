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
    classified,
    flagged,
    inconsistencies,
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


def kinds_of(found) -> list[tuple[str, int, str | None]]:
    return sorted((r.kind, r.uid, r.messageid) for r in found.collect())


def test_only_the_rows_that_may_be_inconsistent_are_kept_and_they_give_every_item(spark):
    # m2 is at uid 2 in the truth and also (stale) at uid 5 in the projection: not an orphan (James's rule);
    # "gone" is nowhere in the truth: an orphan; a projection row without message id is one too.
    truth = spark.createDataFrame([row(1, "m1"), row(2, "m2"), row(3, "m3"), row(4, "m4", seen=True)], SCHEMA)
    projection = spark.createDataFrame([row(1, "m1"), row(2, "m2"), row(4, "m4"), row(5, "m2"), row(6, "gone"),
                                        row(7, None)], SCHEMA)
    kept = classified(truth, projection).filter(flagged())
    assert sorted(r.uid for r in kept.collect()) == [3, 4, 5, 6, 7]   # the consistent rows 1 and 2 are not kept
    assert kinds_of(inconsistencies(kept, truth)) == [(ORPHAN_IMAP_UID, 3, "m3"), (ORPHAN_MESSAGE_ID, 6, "gone"),
                                                      (ORPHAN_MESSAGE_ID, 7, None), (OUTDATED_MESSAGE_ID, 4, "m4")]


def test_a_projection_row_over_another_message_is_outdated_and_an_orphan(spark):
    assert detect(spark, [row(1, "m1")], [row(1, "other")]) == [(ORPHAN_MESSAGE_ID, 1), (OUTDATED_MESSAGE_ID, 1)]


def test_a_null_column_differs_from_any_value_in_the_compared_digest(spark):
    def with_seen(seen):
        return (MBX, 1, "m1", "m1", 1, False, False, False, False, False, seen, False, None, WHEN, WHEN, 120, 1000,
                "header-blob")

    # the digest must tell null from false, and a null in one column from a null in another
    assert detect(spark, [with_seen(None)], [with_seen(False)]) == [(OUTDATED_MESSAGE_ID, 1)]
    swapped = [(MBX, 1, "m1", "m1", 1, None, False, False, False, False, True, False, None, WHEN, WHEN, 120, 1000, "h")]
    other = [(MBX, 1, "m1", "m1", 1, True, False, False, False, False, None, False, None, WHEN, WHEN, 120, 1000, "h")]
    assert detect(spark, swapped, other) == [(OUTDATED_MESSAGE_ID, 1)]


def test_the_two_tables_meet_in_a_hashed_join_without_sorting_them(spark, capsys):
    # Both sides are unique on (mailboxid, uid): sorting a million rows a side to merge them cost more
    # than hashing them (docs/benchmarks.md).
    truth, projection = (spark.createDataFrame([row(1, "m1")], SCHEMA) for _ in range(2))
    classified(truth, projection).explain()
    plan = capsys.readouterr().out
    assert "ShuffledHashJoin" in plan and "FullOuter" in plan
    assert "SortMergeJoin" not in plan


def test_an_orphan_candidate_whose_message_is_at_several_uids_of_the_truth_is_no_orphan_and_not_repeated(spark):
    truth = [row(1, "m1"), row(2, "m1"), row(3, "m3")]
    projection = [row(1, "m1"), row(2, "m1"), row(7, "m1"), row(8, "gone"), row(3, "m3")]
    assert detect(spark, truth, projection) == [(ORPHAN_MESSAGE_ID, 8)]
