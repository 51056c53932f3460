"""The message-inconsistency DAG run by Airflow (``dag.test()``): health gate, Spark, report.

Seeded through the fault seam; checked with CQL by the test: the report's counters equal the
seeded faults, the projection equals the truth afterwards, and the verify pass finds nothing left.
A JMAP client over the same keyspace then lists in every mailbox what the truth holds, with the
repaired flags as keywords.
The DAG's dry run is checked in test_dry_runs_write_nothing.py (nothing written anywhere) and the
job's in tests/integration/maintenance/test_message_inconsistencies_job.py (its counts).
"""

from __future__ import annotations

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.users.cassandra import CassandraUsersRepository
from tests.integration.maintenance.test_message_inconsistencies_job import break_messages, projection_equals_truth
from tests.support.jmap_world import JmapReader
from tests.support.mail_projections import mailbox_context, register_user
from tests.support.maintenance import seed_mail
from tests.support.task_logs import printed_dag_test, run_note, task_log

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "solve_message_inconsistencies"


def test_repair_then_nothing_left(maintenance_airflow, maintenance_keyspace, s3_blobs):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=3, mailboxes_per_user=3, messages_per_mailbox=280)   # 2,520 messages
    break_messages(session, seeded, added=4, removed=3, outdated=2)

    printed, run = printed_dag_test(DAG_ID, {"slices": 4})
    states, summary = run["states"], run["summary"]
    assert run["state"] == "success", states
    # The Spark task's log is read in one screen: the platform's progress and summary at its end, and
    # short (Spark's own logging at WARN).
    log = task_log(printed, "detect_repair_verify")
    tail = "\n".join(log[-30:])
    assert "progress: 4/4 slices" in tail and "SUMMARY solve-message-inconsistencies: COMPLETED" in tail, tail
    assert "fixed:      9" in tail and "full report: s3://" in tail, tail
    assert len(log) < 300, f"{len(log)} lines:\n" + "\n".join(log)
    # The same summary is the run's note, where the operator looks first.
    note = run_note(DAG_ID, run["run_id"])
    assert note is not None and note.startswith("**solve-message-inconsistencies: COMPLETED**"), note
    assert "fixed:      9" in note and f"s3://maintenance-reports/reports/{DAG_ID}__{run['run_id']}/" in note, note
    assert states == {"check_params": "success", "backends_healthy": "success", "detect_repair_verify": "success",
                      "report": "success"}
    assert summary["detected"] == {"orphanImapUidEntry": 4, "orphanMessageIdEntry": 3, "outdatedMessageIdEntry": 2}
    assert (summary["addedMessageIdEntries"], summary["removedMessageIdEntries"],
            summary["updatedMessageIdEntries"]) == (4, 3, 2)
    assert summary["processedImapUidEntries"] == len(seeded.all()) + 4   # what is left of the bulk, and the 4 appended
    assert summary["outcome"] == "COMPLETED"
    projection_equals_truth(session)

    # A second run's detection is the job's own verify pass (spark_apps/common/procedure.py detects
    # again, reading the tables afterwards): nothing left. A second spark-submit of the same code is
    # kept once, in test_solve_mailbox_inconsistencies_dag.py.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)

    # JMAP lists a mailbox from messageIdTable: after the repair it lists what the truth holds.
    truth: dict[str, set[str]] = {}
    for row in session.execute("SELECT mailboxid, messageid FROM imapUidTable"):
        truth.setdefault(str(row["mailboxid"]), set()).add(str(row["messageid"]))
    manager = mailbox_context(session, s3_blobs).manager
    users = CassandraUsersRepository(session, CassandraDomainList(session))
    listed: dict[str, set[str]] = {}
    reader_of: dict[str, JmapReader] = {}   # mailbox id -> its owner's JMAP
    for user in seeded.users:
        register_user(session, user)   # JMAP authenticates users of the repository
        jmap = JmapReader(manager, users, user)
        for mailbox in jmap.mailboxes().values():
            listed[mailbox["id"]] = set(jmap.listed(mailbox["id"]))
            reader_of[mailbox["id"]] = jmap
    assert listed == truth
    # The two messages whose flag update the projection lost (break_messages) show the new flags.
    mailboxes = list(seeded.by_mailbox)
    for i in range(2):
        outdated = seeded.by_mailbox[mailboxes[(i + 2) % len(mailboxes)]][0]
        email_id = str(outdated.message_id)
        email = reader_of[str(outdated.mailbox_id)].emails(email_id)[email_id]
        assert email["keywords"] == {"$flagged": True, "$label": True}, email


def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow):
    from airflow.sdk.exceptions import ParamValidationError

    from tests.e2e.maintenance.conftest import load_dag

    dag = load_dag(DAG_ID)
    with pytest.raises(ParamValidationError, match="Invalid input for param mailbox_ids: 'not-a-uuid' does not match"):
        dag.test(run_conf={"mailbox_ids": ["not-a-uuid"]})
