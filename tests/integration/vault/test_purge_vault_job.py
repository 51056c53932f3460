"""The vault purge Spark job through spark-submit, really killed mid-run, on James's tables and S3.

Issue 14's figure: 100,000 vault entries over 18 months, a retention that expires the 12 oldest.
``VAULT_PURGE_SCALE`` scales it (0.02 by default: 2,000 entries, to keep the suite within its time
budget; 1 for the full figure, see docs/benchmarks.md). Three spark-submits:

1. the purge, throttled so that it cannot finish in less than ~20 s, SIGKILLed (the whole
   spark-submit process tree, with psutil) once a slice is checkpointed; it has deleted part of the
   expired entries. Then James's own task is "killed" between its two steps on one expired month
   (its S3 bucket dropped, its metadata still there), a state a Spark kill cannot make;
2. the same run key started again: it skips the checkpointed slices, deletes the rest and drops the
   12 months. Checked by CQL (every ``deletedMessageMetadata``, ``storageInformation`` and
   ``userPerBucket`` row) and by listing S3: exactly the kept entries are left, byte for byte;
3. a second run (a new run key) finds nothing and deletes nothing; the vault is unchanged.

The dry run is the DAG's e2e test (tests/e2e/maintenance/test_purge_deleted_messages_vault_dag.py).
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from pathlib import Path

import psutil
import pytest

from mailserver.blob.api import BucketName
from mailserver.model.address import Username
from mailserver.model.ids import MessageId
from mailserver.vault.cassandra import cassandra_vault
from spark_apps.common.bookkeeping import CHECKPOINTS_DDL
from tests.support.maintenance import report_of, spark_submit
from tests.support.spark_in_process import run_job
from tests.support.vault_seed import (
    PURGE_BEGINNING,
    PURGE_TASK_TYPE,
    content,
    expected_state,
    listed_months,
    metadata_rows,
    purge_months,
    s3_listing,
    seed_vault,
    storage_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "purge_deleted_messages_vault"
SCALE = float(os.environ.get("VAULT_PURGE_SCALE", "0.02"))
ENTRIES = max(360, int(100_000 * SCALE))
OWNERS = [f"owner{n}@vault.example" for n in range(max(4, ENTRIES // 1000))]
SLICES = 8
MONTHS, EXPIRED, KEPT = purge_months(day=10, hour=12)


def seeded_months_listing(store) -> dict[str, dict[str, int]]:
    """``s3_listing`` of this test's 18 months only: the session's prefix is shared with the other vault
    tests, whose buckets (other years, other keyspaces: unknown to this purge) stay."""
    return {month: objects for month, objects in s3_listing(store).items() if month in {*EXPIRED, *KEPT}}


def kill_tree(pid: int) -> None:
    """SIGKILL a process and everything it started (spark-submit's shell, the JVM, the Python driver
    and its workers), children first so none is reparented and left running."""
    root = psutil.Process(pid)
    tree = [*root.children(recursive=True), root]
    for process in tree:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(tree, timeout=30)
    assert not alive, f"still running after SIGKILL: {alive}"


def test_a_killed_purge_started_again_deletes_exactly_the_expired_entries_and_a_second_run_finds_nothing(
        stack, spark_env, maintenance_keyspace, vault_s3):
    session = maintenance_keyspace
    started = time.monotonic()
    entries = seed_vault(session, vault_s3, MONTHS, ENTRIES, OWNERS)
    seed_s = time.monotonic() - started
    kept = [e for e in entries if e.bucket in KEPT]
    expired = len(entries) - len(kept)
    assert {e.bucket for e in entries} == set(EXPIRED + KEPT) and expired == sum(e.bucket in EXPIRED for e in entries)
    env = {**spark_env, "S3_BUCKET_PREFIX": vault_s3.config.bucket_prefix}
    run_key = f"purge-{uuid.uuid4().hex[:8]}"
    args = ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--beginning-of-retention", PURGE_BEGINNING, "--slices", str(SLICES)]

    # 1. killed once a slice is checkpointed (the rate keeps the repair over ~20 s: not done by then).
    session.session.execute(CHECKPOINTS_DDL, timeout=60)   # the job creates it too; the poll needs it now
    killed_started = time.monotonic()
    slow = spark_submit(JOB, [*args, "--run-key", run_key, "--rate", str(expired / 20)], env, wait=False)
    done: list = []
    deadline = time.monotonic() + 1800
    try:
        while time.monotonic() < deadline and slow.poll() is None:
            done = session.execute("SELECT slice FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                                   (PURGE_TASK_TYPE, run_key))
            if done:
                break
            time.sleep(0.2)
    finally:
        ended = slow.poll()
        if ended is None:
            kill_tree(slow.pid)
        slow.wait(timeout=60)
    killed_after = time.monotonic() - killed_started
    stderr = Path(slow.args[slow.args.index("--py-files") + 1]).with_name("stderr").read_text()
    assert ended is None, f"the purge ended by itself ({ended}) before it was killed:\n{stderr[-4000:]}"
    checkpoints = session.execute("SELECT slice, counters FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                                  (PURGE_TASK_TYPE, run_key))
    checkpointed = {r["slice"] for r in checkpoints}
    counted_before_kill = sum((r["counters"] or {}).get("deletedEntries", 0) for r in checkpoints)
    per_month = Counter(bucket for bucket, _, _ in metadata_rows(session))
    left = sum(per_month[b] for b in EXPIRED)
    assert 1 <= len(checkpointed) < SLICES
    assert 0 < left <= expired - counted_before_kill, "the killed run deleted part of the expired entries"
    assert listed_months(session) == set(EXPIRED + KEPT)   # months are dropped only once all is done

    # James's task killed between its two steps on one month: bucket gone, metadata still there.
    dropped_by_hand = max(EXPIRED, key=lambda b: per_month[b])
    vault_s3.delete_bucket(BucketName(dropped_by_hand))

    # 2. the same run key again: only the rest, then the months.
    resumed = run_job(JOB, [*args, "--run-key", run_key], env)
    assert resumed.returncode == 0, resumed.stderr[-4000:]
    report = report_of(resumed.stdout)
    assert report["outcome"] == "COMPLETED", report
    assert report["type"] == PURGE_TASK_TYPE and report["beginningOfRetentionPeriod"] == "2025-06-01T00:00:01+00:00"
    assert set(report["slices"]["skippedAlreadyDone"]) == checkpointed
    assert set(report["slices"]["repaired"]) == set(range(SLICES)) - checkpointed
    # Slices checkpointed before the kill count through their checkpoints; the entries the interrupted
    # slice had deleted are in no checkpoint and no longer detected: uncounted.
    assert report["deletedEntries"] == counted_before_kill + left
    assert report["expiredBuckets"] == 12 and report["deletedBuckets"] == EXPIRED
    assert report["remaining"] == {} and report["errors"] == []

    metadata, storage, months, s3 = expected_state(kept)
    assert metadata_rows(session) == metadata        # expired rows gone, kept rows untouched
    assert storage_rows(session) == storage
    assert listed_months(session) == months == set(KEPT)
    assert seeded_months_listing(vault_s3) == s3     # expired buckets gone, every kept object there
    sample = kept[len(kept) // 2]
    with cassandra_vault(session, vault_s3).load(Username.of(sample.owner), MessageId.of(sample.message_id)) as f:
        assert f.read() == content(sample.message_id)

    # 3. a second run: nothing to find, nothing deleted.
    again = run_job(JOB, args, env)
    assert again.returncode == 0, again.stderr[-4000:]
    second = report_of(again.stdout)
    assert second["outcome"] == "COMPLETED" and second["detected"] == {}
    assert second.get("deletedEntries", 0) == 0 and second["expiredBuckets"] == 0
    assert second["deletedBuckets"] == []
    assert metadata_rows(session) == metadata and seeded_months_listing(vault_s3) == s3

    print(f"\n[vault purge] {len(entries):,} entries ({expired:,} expired) over 18 months, {len(OWNERS)} owners: "
          f"seeded in {seed_s:.0f} s; killed after {killed_after:.0f} s with {len(checkpointed)}/{SLICES} slices "
          f"checkpointed and {left:,} expired left; the restart deleted {left:,} in {report['durationSeconds']:.0f} s "
          f"({left / report['durationSeconds']:.0f} entries/s incl. detection and verification); "
          f"load average {os.getloadavg()[0]:.1f}")
