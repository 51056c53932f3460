"""The 10 -> 11 migration's Spark job through spark-submit, slice by slice, on a keyspace at version 10.

Checked with CQL by the test: each slice completes exactly its month's rows and leaves the
other months' rows byte for byte as they were, no slice (nor the full run) writes the schema
version, a re-run changes nothing, and a message without its messageV3 row makes every run
PARTIAL with the message named in the report.
"""

from __future__ import annotations

import uuid

import pytest

from tests.integration.cassandra.test_schema_versions import insert_old_copy
from tests.support.cassandra_migration import (
    MONTHS,
    all_complete,
    incomplete_by_month,
    rows_digest,
    v10_keyspace,
    versions,
)
from tests.support.maintenance import report_of, table_checksum
from tests.support.spark_in_process import run_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "migrate_message_denormalization"


@pytest.fixture(scope="module")
def v10(cassandra_config, unique):
    with v10_keyspace(cassandra_config, f"v10spark_{unique}") as keyspace:
        yield keyspace


def run(stack, env, session, *extra: str):
    args = ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--slices", "2", *extra]
    return run_job(JOB, args, env)


def month_range(start, end) -> list[str]:
    return ["--from", start.isoformat(), "--to", end.isoformat()]


@pytest.mark.timeout(2400)   # four spark-submits on a shared 2-core machine
def test_slices_migrate_their_month_only_and_never_bump_the_version(stack, spark_env, v10):
    s, data = v10
    before = incomplete_by_month(s)
    assert set(before) == {"2023-01", "2023-02", "2023-03"} and all(before.values())
    months = [f"{start:%Y-%m}" for start, _ in MONTHS]

    for done, (start, end) in enumerate(MONTHS):
        untouched = set(months[done + 1:])
        digest = rows_digest(s, untouched)
        result = run(stack, spark_env, s, *month_range(start, end))
        assert result.returncode == 0, result.stderr[-4000:]
        report = report_of(result.stdout)
        month = months[done]
        assert report["outcome"] == "COMPLETED" and report["errors"] == [] and report["remaining"] == {}
        assert report["processed"] == before[month]
        assert report["fixed_message_id"] + report["fixed_imap_uid"] == before[month]
        assert report["fixed_message_id"] == report["fixed_imap_uid"]   # every copy is in both tables
        assert report["runningOptions"]["internalDateFrom"] == start.isoformat()
        left = incomplete_by_month(s)
        assert left == {m: before[m] for m in untouched}, f"after {month}"
        assert rows_digest(s, untouched) == digest, f"slice {month} wrote rows of another month"
        assert versions(s) == [10]

    assert all_complete(s, data)

    # Re-running a slice finds nothing and writes nothing; the version stays.
    checksum = table_checksum(s, "messageIdTable", "imapUidTable", "schemaVersion")
    again = run(stack, spark_env, s, *month_range(*MONTHS[0]))
    assert again.returncode == 0, again.stderr[-4000:]
    report = report_of(again.stdout)
    assert (report["processed"], report["detected"], report["outcome"]) == (0, {}, "COMPLETED")
    assert table_checksum(s, "messageIdTable", "imapUidTable", "schemaVersion") == checksum
    assert versions(s) == [10]


def test_a_message_without_messagev3_row_makes_every_run_partial(stack, spark_env, v10):
    s, _ = v10
    mailbox, orphan = uuid.uuid1(), uuid.uuid1()
    insert_old_copy(s, orphan, mailbox, 1)
    try:
        result = run(stack, spark_env, s, *month_range(*MONTHS[1]))
        assert result.returncode == 1, result.stderr[-4000:]
        report = report_of(result.stdout)
        assert report["outcome"] == "PARTIAL"
        assert sorted((e["kind"], e["messageid"]) for e in report["errors"]) == [
            ("incompleteImapUidEntry", str(orphan)), ("incompleteMessageIdEntry", str(orphan))]
        assert all("messageV3 row is missing" in e["error"] for e in report["errors"])
        assert report["remaining"] == {"incompleteImapUidEntry": 1, "incompleteMessageIdEntry": 1}
        assert versions(s) == [10]
    finally:
        s.execute("DELETE FROM messageIdTable WHERE mailboxId = ? AND uid = ?", (mailbox, 1))
        s.execute("DELETE FROM imapUidTable WHERE messageId = ? AND mailboxId = ? AND uid = ?", (orphan, mailbox, 1))
