"""The message-inconsistency Spark job through spark-submit: a killed repair resumes from its checkpoints.

Counters and verify pass are shown through Airflow in
``tests/e2e/maintenance/test_solve_message_inconsistencies_dag.py``, the dry run in
``tests/e2e/maintenance/test_dry_runs_write_nothing.py`` (the same job: the suite runs each Spark
scenario once). Checked with CQL by the test, never by the job.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.flags import Flags, SystemFlag
from spark_apps.common.bookkeeping import CHECKPOINTS_DDL
from tests.support.maintenance import (
    fail_once,
    kill_when,
    metadata,
    report_of,
    seed_mail,
    spark_submit,
)
from tests.support.spark_in_process import run_job

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


def orphan_imap_uid_entries(session: CassandraSession) -> int:
    """imapUidTable entries (the truth) that messageIdTable lacks, counted with CQL."""
    projection = {(r["mailboxid"], r["uid"]) for r in session.execute("SELECT mailboxid, uid FROM messageIdTable")}
    return sum(1 for r in session.execute("SELECT mailboxid, uid FROM imapUidTable")
               if (r["mailboxid"], r["uid"]) not in projection)


def job_args(session: CassandraSession, stack, *extra: str) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, *extra]


def test_a_killed_repair_resumes_and_skips_the_slices_already_done(stack, spark_env, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=4, mailboxes_per_user=4, messages_per_mailbox=5)
    break_messages(session, seeded, added=32, removed=0, outdated=0)
    run_key = f"resume-{uuid.uuid4().hex[:8]}"
    args = job_args(session, stack, "--run-key", run_key, "--slices", "8")

    session.session.execute(CHECKPOINTS_DDL, timeout=60)   # the job creates it too; the poll needs it now
    slow = spark_submit(JOB, [*args, "--rate", "2"], spark_env, wait=False)
    done: list = []

    def two_slices_done() -> bool:
        done[:] = session.execute("SELECT slice FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                                  ("solve-message-inconsistencies", run_key))
        return len(done) >= 2

    kill_when(slow, two_slices_done, every=0.3)
    assert 2 <= len(done) < 8, f"the slow run should be killed mid-repair, it had done {len(done)} slices"
    checkpoints = session.execute("SELECT slice, counters FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                                  ("solve-message-inconsistencies", run_key))
    killed_at = {r["slice"] for r in checkpoints}
    counted_before_kill = sum((r["counters"] or {}).get("addedMessageIdEntries", 0) for r in checkpoints)
    still_broken = orphan_imap_uid_entries(session)

    resumed = run_job(JOB, args, spark_env)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    report = report_of(resumed.stdout)
    assert set(report["slices"]["skippedAlreadyDone"]) == killed_at
    assert set(report["slices"]["repaired"]) == set(range(8)) - killed_at
    # The slices done before the kill still count (their checkpoints carry their counters). Entries
    # fixed in the slice the kill interrupted are in no checkpoint and no longer detected: uncounted.
    assert report["addedMessageIdEntries"] == counted_before_kill + still_broken
    assert counted_before_kill + still_broken <= 32 and report["outcome"] == "COMPLETED"
    projection_equals_truth(session)
