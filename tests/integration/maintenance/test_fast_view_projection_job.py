"""The fast-view recomputation through spark-submit, on rows lost by failed listener writes.

Real MIME (text, HTML, attachments, inline images, bodiless, one over the scanned MiB) is
appended through the mailbox manager onto the real S3; the fast-view listener's INSERT fails on
every attempt for some of them. Checked with CQL by the test: counters equal to the rows lost,
every row afterwards equal to what the server's own code computes from the stored content, a
dry run that writes nothing, a second run that finds nothing, a rebuild-all that rewrites a stale row.
"""

from __future__ import annotations

import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from tests.support.mail_projections import (
    SeededUsers,
    expected_fast_view,
    fail_listener_write,
    fast_view_rows,
    mailbox_context,
    message_ids,
    seed_users,
    user_message_ids,
)
from tests.support.maintenance import report_of, table_checksum
from tests.support.mime_samples import big, sample
from tests.support.spark_in_process import run_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "recompute_fast_view_projection"
FAST_VIEW = "message_fast_view_projection"


def lose_fast_views(ctx, session: CassandraSession, seeded: SeededUsers, *, per_user: int) -> set:
    """Append ``per_user`` messages per user with the fast-view INSERT failing; one is also copied."""
    lost = set()
    for user in seeded.users:
        for n in range(per_user):
            raw = big(n) if n == 0 else sample(n)
            appended = fail_listener_write(ctx, session, FAST_VIEW, "INSERT",
                                           lambda raw=raw, user=user: ctx.manager.append(seeded.inbox[user], raw))
            lost.add(appended.id.message_id.value)
    first = seeded.users[0]   # a copy shares the message id: still one row to compute
    ctx.manager.copy(seeded.inbox[first], seeded.archive[first], uids=[ctx.manager.get_messages(seeded.inbox[first])
                                                                       [-1].uid])
    # an expunged message leaves no row and must not get one back
    ctx.manager.set_flags(seeded.inbox[first], Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=[1])
    ctx.manager.expunge(seeded.inbox[first])
    assert not lost & set(fast_view_rows(session))
    return lost


def rows_equal_server_computation(session: CassandraSession, blobs, ids) -> None:
    rows = fast_view_rows(session)
    for message_id in ids:
        assert rows[message_id] == expected_fast_view(session, blobs, message_id), message_id


def job_args(session: CassandraSession, stack, blobs, *extra: str) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--blob-bucket", blobs.default_bucket.value, *extra]


@pytest.fixture
def broken(maintenance_keyspace, s3_blobs):
    ctx = mailbox_context(maintenance_keyspace, s3_blobs)
    seeded = seed_users(ctx, maintenance_keyspace, users=3, inbox_messages=6, archive_messages=2)
    return seeded, lose_fast_views(ctx, maintenance_keyspace, seeded, per_user=3)


def test_dry_run_then_repair_then_nothing_left_then_rebuild_all(stack, spark_env, maintenance_keyspace, s3_blobs,
                                                                 broken):
    session = maintenance_keyspace
    _, lost = broken
    assert len(lost) == 9
    before = table_checksum(session, FAST_VIEW)

    dry = run_job(JOB, job_args(session, stack, s3_blobs, "--dry-run"), spark_env)
    assert dry.returncode == 0, dry.stdout[-4000:] + dry.stderr[-2000:]
    dry_report = report_of(dry.stdout)
    assert dry_report["detected"] == {"missingFastViewProjection": 9}
    assert {i["messageid"] for i in dry_report["detectedItems"]} == {str(m) for m in lost}
    assert table_checksum(session, FAST_VIEW) == before

    fixed = run_job(JOB, job_args(session, stack, s3_blobs, "--rate", "50"), spark_env)
    assert fixed.returncode == 0, fixed.stdout[-4000:] + fixed.stderr[-2000:]
    report = report_of(fixed.stdout)
    assert report["type"] == "RecomputeAllFastViewProjectionItemsTask" and report["outcome"] == "COMPLETED"
    assert (report["processedUserCount"], report["processedMessageCount"]) == (3, 9)
    assert (report["failedUserCount"], report["failedMessageCount"]) == (0, 0)
    assert report["runningOptions"]["messagesPerSecond"] == 50.0
    assert report["remaining"] == {}
    every = message_ids(session)
    assert set(fast_view_rows(session)) == every            # no row missing, none for the expunged message
    rows_equal_server_computation(session, s3_blobs, lost)
    assert {fast_view_rows(session)[m][1] for m in lost} == {True, False}

    again = run_job(JOB, job_args(session, stack, s3_blobs), spark_env)
    assert again.returncode == 0, again.stdout[-4000:] + again.stderr[-2000:]
    assert report_of(again.stdout)["detected"] == {}

    # a row computed by an older release: only rebuild-all looks at rows that exist
    stale = next(iter(lost))
    session.execute("UPDATE message_fast_view_projection SET preview = 'stale', hasAttachment = true "
                    "WHERE messageId = ?", (stale,))
    rebuilt = run_job(JOB, job_args(session, stack, s3_blobs, "--mode", "rebuild-all"), spark_env)
    assert rebuilt.returncode == 0, rebuilt.stdout[-4000:] + rebuilt.stderr[-2000:]
    report = report_of(rebuilt.stdout)
    assert report["detected"] == {"existingFastViewProjection": len(every)}
    assert report["processedMessageCount"] == len(every) and report["outcome"] == "COMPLETED"
    rows_equal_server_computation(session, s3_blobs, every)


def test_user_variant_computes_that_users_messages_only(stack, spark_env, maintenance_keyspace, s3_blobs, broken):
    session = maintenance_keyspace
    seeded, lost = broken
    user = seeded.users[1]
    mine = user_message_ids(session, user)
    done = run_job(JOB, job_args(session, stack, s3_blobs, "--user", str(user)), spark_env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = report_of(done.stdout)
    assert report["type"] == "RecomputeUserFastViewProjectionItemsTask" and report["username"] == str(user)
    assert report["processedMessageCount"] == 3 and report["failedMessageCount"] == 0
    rows = fast_view_rows(session)
    assert lost & mine <= set(rows) and len(lost & mine) == 3
    assert not (lost - mine) & set(rows)                     # the others' rows are still missing
    rows_equal_server_computation(session, s3_blobs, lost & mine)
