"""The message-inconsistency Spark job through spark-submit, on data broken by the fault seam.

Checked with CQL by the test, never by the job: counters equal to what was seeded, the
projection equal to the truth afterwards, a dry run that writes nothing, a second run that
finds nothing, and a run killed mid-repair that resumes from its checkpoints.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.flags import Flags, SystemFlag
from spark_apps.common.bookkeeping import CHECKPOINTS_DDL
from spark_apps.common.reports import ReportLocation, read_report, s3_client
from tests.support.maintenance import (
    fail_once,
    metadata,
    report_of,
    seed_mail,
    spark_submit,
    table_checksum,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "solve_message_inconsistencies"


def projection_equals_truth(session: CassandraSession) -> None:
    columns = "mailboxid, uid, messageid, modseq, flagseen, flagflagged, userflags, headercontent"
    truth = {(r["mailboxid"], r["uid"]): r for r in session.execute(f"SELECT {columns} FROM imapUidTable")}
    projection = {(r["mailboxid"], r["uid"]): r for r in session.execute(f"SELECT {columns} FROM messageIdTable")}
    assert projection == truth


def break_messages(session: CassandraSession, seeded, *, added: int, removed: int, outdated: int) -> None:
    """Each inconsistency kind produced where production produces it (a failed projection write)."""
    store = CassandraMessageStore(session)
    mailboxes = list(seeded.by_mailbox)
    for i in range(added):            # appended, projection write lost
        mailbox = mailboxes[i % len(mailboxes)]
        m = metadata(mailbox, 10_000 + i)
        fail_once(session, "messageIdTable", "UPDATE", lambda m=m: store.add(m))
    for i in range(removed):          # expunged, projection delete lost
        victim = seeded.by_mailbox[mailboxes[(i + 1) % len(mailboxes)]].pop()
        fail_once(session, "messageIdTable", "DELETE", lambda v=victim: store.delete(v))
    for i in range(outdated):         # flagged, projection update lost
        m = seeded.by_mailbox[mailboxes[(i + 2) % len(mailboxes)]][0]
        new = m.with_flags(Flags.of(SystemFlag.FLAGGED, user=["$label"]), m.mod_seq + 1)
        fail_once(session, "messageIdTable", "UPDATE", lambda m=m, new=new: store.update_flags(m, new))


def job_args(session: CassandraSession, stack, *extra: str) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, *extra]


@pytest.fixture
def broken(maintenance_keyspace):
    seeded = seed_mail(maintenance_keyspace, users=3, mailboxes_per_user=3, messages_per_mailbox=40)
    break_messages(maintenance_keyspace, seeded, added=5, removed=4, outdated=3)
    return seeded


def test_dry_run_reports_and_writes_nothing_then_repair_fixes_exactly_what_was_broken(
        stack, spark_env, maintenance_keyspace, broken):
    session = maintenance_keyspace
    truth_rows = len(session.execute("SELECT uid FROM imapUidTable"))
    projection_rows = len(session.execute("SELECT uid FROM messageIdTable"))
    before = table_checksum(session, "imapUidTable", "messageIdTable")
    dry = spark_submit(JOB, job_args(session, stack, "--dry-run"), spark_env)
    assert dry.returncode == 0, dry.stderr[-4000:]
    assert report_of(dry.stdout)["detected"] == {"orphanImapUidEntry": 5, "orphanMessageIdEntry": 4,
                                                 "outdatedMessageIdEntry": 3}
    assert table_checksum(session, "imapUidTable", "messageIdTable") == before

    run_key = f"test-{uuid.uuid4().hex[:8]}"
    fixed = spark_submit(JOB, job_args(session, stack, "--run-key", run_key, "--triggered-by", "pytest"), spark_env)
    assert fixed.returncode == 0, fixed.stderr[-4000:]
    report = report_of(fixed.stdout)
    assert (report["addedMessageIdEntries"], report["removedMessageIdEntries"],
            report["updatedMessageIdEntries"]) == (5, 4, 3)
    assert report["processedImapUidEntries"] == truth_rows
    assert report["processedMessageIdEntries"] == projection_rows
    assert projection_rows - truth_rows == 4 - 5   # 4 orphan projection rows, 5 missing ones
    assert report["errors"] == [] and report["outcome"] == "COMPLETED" and report["remaining"] == {}
    assert len(report["fixedInconsistencies"]) == 12
    projection_equals_truth(session)

    # the same report is in S3, and the audit row says who ran what and how it ended
    stored = read_report(ReportLocation.for_run("solve-message-inconsistencies", run_key), s3_client(spark_env))
    assert stored["addedMessageIdEntries"] == 5
    audit = session.one("SELECT triggered_by, outcome, counts_before, counts_after FROM maintenance_audit "
                        "WHERE job = 'solve-message-inconsistencies' AND run_key = ? ALLOW FILTERING", (run_key,))
    assert audit["triggered_by"] == "pytest" and audit["outcome"] == "COMPLETED"
    assert '"orphanImapUidEntry": 5' in audit["counts_before"] and audit["counts_after"] == "{}"

    again = spark_submit(JOB, job_args(session, stack), spark_env)
    assert again.returncode == 0, again.stderr[-4000:]
    assert report_of(again.stdout)["detected"] == {}


def test_a_killed_repair_resumes_and_skips_the_slices_already_done(stack, spark_env, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=4, mailboxes_per_user=4, messages_per_mailbox=5)
    break_messages(session, seeded, added=32, removed=0, outdated=0)
    run_key = f"resume-{uuid.uuid4().hex[:8]}"
    args = job_args(session, stack, "--run-key", run_key, "--slices", "8")

    session.session.execute(CHECKPOINTS_DDL, timeout=60)   # the job creates it too; the poll needs it now
    slow = spark_submit(JOB, [*args, "--rate", "2"], spark_env, wait=False)
    done: list = []
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and slow.poll() is None:
            done = session.execute("SELECT slice FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                                   ("solve-message-inconsistencies", run_key))
            if len(done) >= 2:
                break
            time.sleep(0.3)
    finally:
        ended = slow.poll()
        os.killpg(slow.pid, signal.SIGKILL)
        slow.wait(timeout=60)
    stderr = Path(slow.args[slow.args.index("--py-files") + 1]).with_name("stderr").read_text()
    assert ended is None, f"the slow run ended by itself ({ended}) before it was killed:\n{stderr[-4000:]}"
    assert 2 <= len(done) < 8, f"the slow run should be killed mid-repair, it had done {len(done)} slices"
    killed_at = {r["slice"] for r in session.execute(
        "SELECT slice FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
        ("solve-message-inconsistencies", run_key))}

    resumed = spark_submit(JOB, args, spark_env)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    report = report_of(resumed.stdout)
    assert set(report["slices"]["skippedAlreadyDone"]) == killed_at
    assert set(report["slices"]["repaired"]) == set(range(8)) - killed_at
    # the slices done before the kill still count: the report covers the whole run
    assert report["addedMessageIdEntries"] == 32 and report["outcome"] == "COMPLETED"
    projection_equals_truth(session)
