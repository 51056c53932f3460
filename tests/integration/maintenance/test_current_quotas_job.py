"""The current-quota recomputation through spark-submit, on quotas broken by failed listener writes.

Mail goes through the mailbox manager (Cassandra + the real S3); the quota listener's counter
UPDATE fails on every attempt for one append, one expunge and one mailbox deletion. Checked with
CQL by the test: ``--user`` touching one root only, and components without data refused. The whole
job (counters, dry run, verify pass) is shown through Airflow in
``tests/e2e/maintenance/test_recompute_current_quotas_dag.py``.
"""

from __future__ import annotations

import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from tests.support.mail_projections import (
    SeededUsers,
    fail_listener_write,
    mailbox_context,
    register_user,
    seed_users,
    stored_quota,
    usage_by_cql,
)
from tests.support.maintenance import report_of
from tests.support.mime_samples import sample
from tests.support.spark_in_process import run_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "recompute_current_quotas"
QUOTA = "quotaCurrentValue"


def break_quotas(ctx, session: CassandraSession, seeded: SeededUsers) -> list[Username]:
    """Under-count one user, over-count two (expunge, mailbox deletion): the listener gave up each time."""
    appended, expunged, deleted = seeded.users[:3]
    fail_listener_write(ctx, session, QUOTA, "UPDATE", lambda: ctx.manager.append(seeded.inbox[appended], sample(7)))
    ctx.manager.set_flags(seeded.inbox[expunged], Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=[1, 2])
    fail_listener_write(ctx, session, QUOTA, "UPDATE", lambda: ctx.manager.expunge(seeded.inbox[expunged]))
    fail_listener_write(ctx, session, QUOTA, "UPDATE", lambda: ctx.manager.delete_mailbox(seeded.archive[deleted]))
    broken = [appended, expunged, deleted]
    for user in broken:
        assert stored_quota(session, user) != usage_by_cql(session, user)
    return broken


def quotas_equal_messages(session: CassandraSession, users: list[Username]) -> None:
    for user in users:
        assert stored_quota(session, user) == usage_by_cql(session, user), user


def job_args(session: CassandraSession, stack, *extra: str) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, *extra]


@pytest.fixture
def seeded(maintenance_keyspace, s3_blobs):
    ctx = mailbox_context(maintenance_keyspace, s3_blobs)
    users = seed_users(ctx, maintenance_keyspace, users=4, inbox_messages=5, archive_messages=3)
    # registered, never received anything: a root to visit with nothing to fix
    register_user(maintenance_keyspace, Username.of(f"idle-{users.users[0]}"))
    return ctx, users


def test_user_scope_repairs_that_root_only(stack, spark_env, maintenance_keyspace, seeded):
    session = maintenance_keyspace
    ctx, users = seeded
    first, other = break_quotas(ctx, session, users)[:2]
    other_before = stored_quota(session, other)

    scoped = run_job(JOB, job_args(session, stack, "--user", str(first).upper(), "--rate", "5"), spark_env)
    assert scoped.returncode == 0, scoped.stdout[-4000:] + scoped.stderr[-2000:]
    report = report_of(scoped.stdout)
    assert report["detected"] == {"outdatedCurrentQuota": 1} and report["processedQuotaRoots"] == 1
    assert report["runningOptions"]["user"] == str(first)
    assert stored_quota(session, first) == usage_by_cql(session, first)
    assert stored_quota(session, other) == other_before != usage_by_cql(session, other)


@pytest.mark.parametrize("component", ["SIEVE", "JMAP_UPLOADS"])
def test_components_without_data_are_refused_before_anything_runs(stack, spark_env, maintenance_keyspace, component):
    done = run_job(JOB, job_args(maintenance_keyspace, stack, "--quota-component", component), spark_env)
    assert done.returncode == 2
    output = done.stdout + done.stderr   # spark-submit merges the Python driver's stderr into its stdout
    assert f"--quota-component {component}: this server stores no" in output
    assert not [line for line in output.splitlines() if line.startswith("REPORT ")]
