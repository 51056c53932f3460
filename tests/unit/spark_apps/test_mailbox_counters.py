"""Detection of wrong mailbox counters on tiny local DataFrames shaped as the connector reads them."""

from __future__ import annotations

import uuid

import pytest

from spark_apps.jobs.recompute_mailbox_counters import OUTDATED, counter_inconsistencies, expected_counters

pytestmark = pytest.mark.spark

MESSAGES = "mailboxid string, uid long, messageid string, flagseen boolean"
COUNTERS = "mailboxid string, count long, unseen long"
A, B, C = (str(uuid.uuid1()) for _ in range(3))


def frames(spark, messages, truth, counters, mailboxes=(A, B, C)):
    return (spark.createDataFrame([(m,) for m in mailboxes], "mailboxid string"),
            spark.createDataFrame(messages, MESSAGES), spark.createDataFrame(truth, MESSAGES),
            spark.createDataFrame(counters, COUNTERS))


def computed(spark, messages, truth=None, mailboxes=(A, B, C)):
    boxes, projection, imap_uid, _ = frames(spark, messages, truth or [], [], mailboxes)
    result = expected_counters(boxes, projection, imap_uid if truth is not None else None)
    return {r.mailboxid: (r["count"], r["unseen"]) for r in result.collect()}


def wrong(spark, messages, counters, *, truth=None):
    boxes, projection, imap_uid, stored = frames(spark, messages, truth or [], counters)
    expected = expected_counters(boxes, projection, imap_uid if truth is not None else None)
    return sorted((r.kind, r.mailboxid) for r in counter_inconsistencies(expected, stored).collect())


MESSAGES_OF_A = [(A, 1, "m1", True), (A, 2, "m2", False), (A, 3, "m3", None)]


def test_count_and_unseen_per_mailbox_an_empty_mailbox_counts_zero(spark):
    assert computed(spark, [*MESSAGES_OF_A, (B, 1, "m4", True)]) == {A: (3, 2), B: (1, 0), C: (0, 0)}


def test_rows_without_message_id_are_partial_writes_and_not_counted(spark):
    assert computed(spark, [(A, 1, None, False), (A, 2, "m2", False)], mailboxes=(A,)) == {A: (1, 1)}


def test_unless_trusted_a_row_counts_only_when_the_truth_has_it_at_the_same_uid_with_its_flags(spark):
    truth = [(A, 1, "m1", False),      # the truth says unseen: it wins over the projection
             (A, 3, "m3", True),
             (A, 9, "m2", False)]      # m2 at another uid: the projection row at uid 2 is not counted
    assert computed(spark, MESSAGES_OF_A, truth, mailboxes=(A,)) == {A: (2, 1)}
    assert computed(spark, MESSAGES_OF_A, None, mailboxes=(A,)) == {A: (3, 2)}


def test_right_counters_yield_nothing_and_a_missing_row_equals_zero(spark):
    assert wrong(spark, MESSAGES_OF_A, [(A, 3, 2)]) == []


def test_count_or_unseen_off_and_missing_counters_are_detected(spark):
    messages = [*MESSAGES_OF_A, (B, 1, "m4", False), (C, 1, "m5", True)]
    counters = [(A, 3, 1), (B, 2, 1)]   # A: unseen off; B: count off; C: no counter row
    assert wrong(spark, messages, counters) == [(OUTDATED, A), (OUTDATED, B), (OUTDATED, C)]


def test_counters_of_an_emptied_mailbox_are_detected_and_negative_ones_too(spark):
    assert wrong(spark, [], [(A, 1, 1), (B, -1, 0), (C, 0, 0)]) == [(OUTDATED, A), (OUTDATED, B)]


def test_detection_with_the_truth_sees_counters_right_for_the_projection_as_wrong(spark):
    truth = [(A, 1, "m1", True), (A, 2, "m2", False)]   # m3 was expunged from the truth only
    assert wrong(spark, MESSAGES_OF_A, [(A, 3, 2)], truth=truth) == [(OUTDATED, A)]
    assert wrong(spark, MESSAGES_OF_A, [(A, 3, 2)]) == []
