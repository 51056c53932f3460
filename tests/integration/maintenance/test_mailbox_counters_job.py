"""The mailbox-counters Spark job through spark-submit, on counters broken by the fault seam.

Checked with CQL by the test, never by the job: counters equal to what was seeded, the stored
counters equal to what ``imapUidTable`` holds afterwards, dry runs that write nothing, a second
run that finds nothing; and the repair recomputing at repair time (what changed since the
detection counts) and never bringing back the counters of a deleted mailbox.
"""

from __future__ import annotations

import pytest

from mailserver.mailbox.cassandra_mailboxes import CassandraMailboxStore
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED
from spark_apps.jobs.recompute_mailbox_counters import OUTDATED, RecomputeMailboxCounters
from tests.support.counters_maintenance import (
    break_counters,
    counters_from_truth,
    counters_match_truth,
    stored_counters,
)
from tests.support.maintenance import fail_once, metadata, report_of, seed_mail, spark_submit, table_checksum

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "recompute_mailbox_counters"
WRITTEN = ("mailboxCounters", "imapUidTable", "messageIdTable", "mailbox")


def job_args(session, stack, *extra: str) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, *extra]


@pytest.fixture
def broken(maintenance_keyspace):
    """8 wrong mailboxes out of 9: 7 lost counter updates, 1 expunge stopped before messageIdTable."""
    session = maintenance_keyspace
    seeded = seed_mail(session, users=3, mailboxes_per_user=3, messages_per_mailbox=20)
    broken = break_counters(session, seeded, appends=3, flag_changes=2, expunges=2, projection_orphans=1)
    truth, stored = counters_from_truth(session), stored_counters(session)
    assert sum(1 for k, v in truth.items() if stored.get(k) != v) == 8
    return broken


def test_dry_runs_write_nothing_and_only_checking_the_truth_sees_a_projection_orphan(
        stack, spark_env, maintenance_keyspace, broken):
    session = maintenance_keyspace
    before = table_checksum(session, *WRITTEN)
    trusting = spark_submit(JOB, job_args(session, stack, "--dry-run", "--trust-message-projection"), spark_env)
    assert trusting.returncode == 0, trusting.stderr[-4000:]
    report = report_of(trusting.stdout)
    # trusting messageIdTable, the mailbox whose expunge stopped before the projection looks right
    assert report["detected"] == {OUTDATED: 7} and report["runningOptions"] == {"trustMessageProjection": True}
    assert {i["mailboxid"] for i in report["detectedItems"]} == {str(m.value) for m in broken.counters}
    assert (report["outcome"], report["processedMailboxes"], report["failedMailboxes"]) == ("DRY_RUN", 9, [])
    dry = spark_submit(JOB, job_args(session, stack, "--dry-run"), spark_env)
    assert dry.returncode == 0, dry.stderr[-4000:]
    assert report_of(dry.stdout)["detected"] == {OUTDATED: 8}
    assert table_checksum(session, *WRITTEN) == before


def test_the_repair_makes_every_counter_equal_the_truth_and_a_second_run_finds_nothing(
        stack, spark_env, maintenance_keyspace, broken):
    session = maintenance_keyspace
    fixed = spark_submit(JOB, job_args(session, stack, "--slices", "4"), spark_env)
    assert fixed.returncode == 0, fixed.stderr[-4000:]
    report = report_of(fixed.stdout)
    assert report["type"] == "recompute-mailbox-counters" and report["detected"] == {OUTDATED: 8}
    assert (report["processedMailboxes"], report["failedMailboxes"], report["recomputedMailboxes"]) == (9, [], 8)
    assert report["outcome"] == "COMPLETED" and report["remaining"] == {}
    counters_match_truth(session)

    again = spark_submit(JOB, job_args(session, stack), spark_env)
    assert again.returncode == 0, again.stderr[-4000:]
    assert report_of(again.stdout)["detected"] == {}


def test_the_repair_recomputes_at_repair_time_and_applies_the_difference(stack, maintenance_keyspace):
    session = maintenance_keyspace
    store = CassandraMessageStore(session)
    mailbox = CassandraMailboxStore(session).create(MailboxPath.of(Username.of("bob@example.com"), "INBOX"), 42)
    endpoint = CqlEndpoint(stack.cassandra_hosts, stack.cassandra_port, session.keyspace)
    item = {"kind": OUTDATED, "mailboxid": str(mailbox.id.value)}
    for uid in (1, 2, 3):
        store.add(metadata(mailbox.id, uid, seen=uid == 1))
    fail_once(session, "mailboxCounters", "UPDATE", lambda: store.add(metadata(mailbox.id, 4)))
    # detected now; then more traffic before the repair: a correct append and a counter update lost again
    store.add(metadata(mailbox.id, 5, seen=True))
    fail_once(session, "mailboxCounters", "UPDATE", lambda: store.add(metadata(mailbox.id, 6)))
    assert stored_counters(session)[mailbox.id.value] == (4, 2)

    outcome = RecomputeMailboxCounters().repair(endpoint, item)
    assert outcome.status == FIXED
    assert (outcome.item["previousCount"], outcome.item["count"], outcome.item["unseen"]) == (4, 6, 4)
    assert stored_counters(session)[mailbox.id.value] == (6, 4)
    assert RecomputeMailboxCounters().repair(endpoint, item).status == SKIPPED   # right meanwhile

    CassandraMailboxStore(session).delete(mailbox)   # the mailbox row goes first; its messages are still listed
    session.execute("UPDATE mailboxCounters SET count = count + 1 WHERE mailboxId = ?", (mailbox.id.value,))
    assert RecomputeMailboxCounters().repair(endpoint, item).status == SKIPPED   # deleted mailbox: left alone
    assert stored_counters(session)[mailbox.id.value] == (7, 4)
    for m in store.list(mailbox.id):   # finish the deletion: the keyspace is left consistent
        store.delete(m)
    store.clear_mailbox_indexes(mailbox.id)
