"""The vault purge job's pure parts: the retention start, which months expire, bucket names, options, slices."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta

import pytest

from spark_apps.common.procedure import ProcedureRunner
from spark_apps.common.vault_purge import slice_of
from spark_apps.jobs.purge_deleted_messages_vault import (
    PurgeDeletedMessagesVault,
    beginning_of_retention,
    expired,
    from_micros,
    s3_bucket,
    slice_work,
    to_micros,
)

NOW = datetime(2026, 11, 1, 0, 0, 5, tzinfo=UTC)


def test_beginning_is_now_minus_retention_or_the_given_instant():
    assert beginning_of_retention(NOW, None, None) == NOW - timedelta(seconds=31556952)
    assert beginning_of_retention(NOW, "30", None) == NOW - timedelta(days=30)
    assert beginning_of_retention(NOW, "2 weeks", None) == NOW - timedelta(days=14)
    assert beginning_of_retention(NOW, "1y", "2025-06-01T02:00:00+02:00") == datetime(2025, 6, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="offset"):
        beginning_of_retention(NOW, None, "2025-06-01T00:00:00")
    with pytest.raises(ValueError):
        beginning_of_retention(NOW, "-3", None)


def test_whole_months_expire_once_ended_before_the_beginning():
    buckets = ["deleted-messages-2025-10-01", "deleted-messages-2025-11-01", "deleted-messages-2025-12-01",
               "deleted-messages-2025-13-01", "not-a-vault-bucket", "deleted-messages-2024-12-01"]
    beginning = datetime(2025, 12, 1, 0, 0, 1, tzinfo=UTC)    # November ended at 2025-12-01T00:00:00
    assert expired(buckets, beginning) == ["deleted-messages-2024-12-01", "deleted-messages-2025-10-01",
                                           "deleted-messages-2025-11-01"]
    assert expired(buckets, datetime(2025, 12, 1, tzinfo=UTC)) == ["deleted-messages-2024-12-01",
                                                                   "deleted-messages-2025-10-01"]


def test_s3_bucket_carries_the_server_prefix():
    assert s3_bucket("", "deleted-messages-2025-10-01") == "deleted-messages-2025-10-01"
    assert s3_bucket("prod-", "deleted-messages-2025-10-01") == "prod-deleted-messages-2025-10-01"


def test_configure_reads_options_and_environment(monkeypatch):
    monkeypatch.setenv("S3_ENDPOINT", "http://127.0.0.1:9000")
    monkeypatch.setenv("S3_BUCKET_PREFIX", "env-")
    job = PurgeDeletedMessagesVault()
    options = job.configure(argparse.Namespace(retention="1y", beginning_of_retention="2025-06-01T00:00:00Z",
                                               bucket_prefix=None, concurrency=8))
    assert options == {"beginningOfRetentionPeriod": "2025-06-01T00:00:00+00:00", "bucketPrefix": "env-",
                       "concurrency": 8}
    job.configure(argparse.Namespace(retention=None, beginning_of_retention=None, bucket_prefix="arg-",
                                     concurrency=3))
    assert job.bucket_prefix == "arg-" and job.concurrency == 3


def test_eight_groups_of_owner_partitions_are_purged_at_once_per_task_by_default(monkeypatch, capsys):
    monkeypatch.setenv("S3_ENDPOINT", "http://127.0.0.1:9000")
    job = PurgeDeletedMessagesVault()
    _, _, _, options = ProcedureRunner(job).parse([])
    assert job.concurrency == options["concurrency"] == 8
    ProcedureRunner(job).parse(["--concurrency", "1"])
    assert job.concurrency == 1   # one group at a time
    for bad in ("0", "-2", "65"):
        with pytest.raises(SystemExit) as exit_:
            ProcedureRunner(PurgeDeletedMessagesVault()).parse(["--concurrency", bad])
        assert exit_.value.code == 2
    assert "--concurrency must be between 1 and 64" in capsys.readouterr().err


def test_the_beginning_is_recorded_to_the_microsecond():
    instant = datetime(2025, 6, 1, 0, 0, 1, 123457, tzinfo=UTC)
    assert to_micros(instant) == 1748736001123457
    assert from_micros(to_micros(instant)) == instant
    assert from_micros(to_micros(instant)).isoformat() == "2025-06-01T00:00:01.123457+00:00"


def test_slice_work_spreads_the_owner_partitions_and_leaves_out_the_slices_done():
    months = ("deleted-messages-2024-06-01", "deleted-messages-2024-07-01")
    pairs = [(month, f"owner{n}@example.com") for month in months for n in range(40)]
    work = slice_work(pairs, 4, done=[])
    assert sorted(p for ps in work.values() for p in ps) == sorted(pairs)
    assert all(slice_of(m, o, 4) == s for s, ps in work.items() for m, o in ps)
    resumed = slice_work(pairs, 4, done=[0, 2])
    assert set(resumed) == {1, 3} and resumed[1] == work[1] and resumed[3] == work[3]
    assert slice_work([], 3, done=[1]) == {0: [], 2: []}   # slices without pairs are still listed (repaired)


def test_the_month_purge_has_no_entry_by_entry_repair():
    with pytest.raises(NotImplementedError):
        PurgeDeletedMessagesVault().repair(None, {})  # type: ignore[arg-type]
