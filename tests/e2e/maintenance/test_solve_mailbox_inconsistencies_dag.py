"""The mailbox-inconsistency DAG run by Airflow (``dag.test()``) inside maintenance mode.

Seeded through the fault seam, checked with CQL, JMAP and the test WebAdmin: the repair counts what
was seeded and fixes it while maintenance mode is on (a JMAP client then lists the mailboxes CQL
has), and maintenance mode is off at the end of every run, also when the repair task really fails
(a ghost mailbox makes the job end PARTIAL, exit status 1). The dry run (nothing written,
maintenance never on) is checked in test_dry_runs_write_nothing.py.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.users.cassandra import CassandraUsersRepository
from tests.e2e.maintenance.conftest import run_dag, webadmin_get
from tests.support.jmap_world import JmapReader
from tests.support.mail_projections import mailbox_context, register_user
from tests.support.mailbox_inconsistencies import (
    GHOST_CONFLICT,
    assert_repaired_as_expected,
    break_mailboxes,
    mailbox_tables,
    seed_mailboxes,
)
from tests.support.maintenance import append_mail, table_checksum

pytestmark = [pytest.mark.e2e, pytest.mark.spark,
              pytest.mark.timeout(2400)]  # several Spark runs per test on a shared 2-core host

DAG_ID = "solve_mailbox_inconsistencies"


def instant(value) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value.replace("Z", "+00:00"))


def task_instances(run) -> dict:
    return {ti.task_id: ti for ti in run.get_task_instances()}


def test_repair_inside_maintenance_mode_and_traffic_resumes(
        maintenance_airflow, maintenance_webadmin, maintenance_keyspace, s3_blobs):
    session = maintenance_keyspace
    seeded = seed_mailboxes(session, users=10, per_user=10)
    broken = break_mailboxes(session, seeded, orphan_paths=2, orphan_rows=2, renames_row_lost=1,
                             renames_delete_lost=1, stale_rows=1)
    # Mail in every mailbox the faults left alone (2,375 messages): the repair must not touch it.
    append_mail(session, {m.id: m.path.user for m in seeded if m.id not in broken.expected}, 25)
    messages_before = table_checksum(session, "imapUidTable", "messageIdTable")

    run, states, summary = run_dag(DAG_ID, {"slices": 2})
    assert run.state == "success", states
    assert {k: states[k] for k in ("maintenance_window", "detect_repair_verify", "report",
                                   "disable_maintenance")} == dict.fromkeys(
        ("maintenance_window", "detect_repair_verify", "report", "disable_maintenance"), "success")
    assert summary["detected"] == broken.counts()
    assert summary["outcome"] == "COMPLETED" and summary["conflictingEntries"] == []
    assert summary["runningOptions"] == {"maxIterations": 1, "autoMerge": False}
    assert_repaired_as_expected(session, broken)
    assert table_checksum(session, "imapUidTable", "messageIdTable") == messages_before

    # JMAP's Mailbox/get agrees with the repaired tables: each owner of a repaired mailbox sees the
    # mailboxes CQL has for them, the repaired ones under their expected names and ids.
    rows, _ = mailbox_tables(session)
    manager = mailbox_context(session, s3_blobs).manager
    users = CassandraUsersRepository(session, CassandraDomainList(session))
    for owner in {path.user for path, _ in broken.expected.values()}:
        register_user(session, owner)   # JMAP authenticates users of the repository
        listed = {name: m["id"] for name, m in JmapReader(manager, users, owner).mailboxes().items()}
        assert listed == {name: str(mailbox_id) for mailbox_id, (_, user, name, _) in rows.items()
                          if user == str(owner)}
        assert listed.items() >= {(path.name, str(mailbox_id)) for mailbox_id, (path, _) in broken.expected.items()
                                  if path.user == owner}

    # On only while the Spark task ran (it switches it on itself, inside its pool slot) and off when
    # it ended: the window's "since" marks are both within the task.
    tis = task_instances(run)
    spark = tis["detect_repair_verify"]
    off = webadmin_get(maintenance_webadmin, "/maintenance")
    assert off["enabled"] is False and spark.start_date <= instant(off["since"]) <= spark.end_date
    assert webadmin_get(maintenance_webadmin, "/maintenance")["enabled"] is False

    run, states, summary = run_dag(DAG_ID)
    assert run.state == "success", states
    assert summary["detected"] == {}


def test_maintenance_mode_is_switched_off_even_when_the_repair_task_fails(
        maintenance_airflow, maintenance_webadmin, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mailboxes(session, users=2, per_user=3)
    broken = break_mailboxes(session, seeded, orphan_paths=1, ghosts=1)
    (ghost, live, path), = broken.ghosts

    run, states, _ = run_dag(DAG_ID)
    assert run.state == "failed", states
    # The Spark task itself failed (the job ends PARTIAL: exit status 1), on every attempt.
    assert states["detect_repair_verify"] == "failed" and states["report"] == "failed"
    assert states["maintenance_window"] == "success" and states["disable_maintenance"] == "success"
    assert webadmin_get(maintenance_webadmin, "/maintenance")["enabled"] is False

    # What could be fixed was fixed; the ghost was left for an administrator.
    rows, paths = mailbox_tables(session)
    orphan, = broken.by_kind["orphanMailboxPathDAOEntry"]
    assert orphan.value in rows
    assert rows[ghost.value][2] == path.name and paths[(path.namespace, str(path.user), path.name)][0] == live.value
    assert broken.by_kind[GHOST_CONFLICT] == [ghost]
