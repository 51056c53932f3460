"""A 50 MB message through the S3 blob store in bounded memory.

The message is generated as a stream of 64 KiB chunks (never one 50 MB bytes object). The
save and the read each run in a fresh process (tests/support/blob_memory_probe.py) that
reports its peak RSS after a warm-up and after the operation, so pytest's own memory does not
count (``VmHWM``: a child's ``ru_maxrss`` starts at pytest's peak on Linux, see the probe).
Bounds, from what was measured on the local stack (S3Proxy):

- save: growth below 40 MiB. Measured 20-26 MiB: the input is spooled to disk and s3transfer
  holds at most (max_concurrency + 1) parts of 5 MiB, plus its threads.
- read: growth below 8 MiB. Measured under 1 MiB: the response is read 1 MiB at a time.

Both bounds are below the message size: an implementation holding the message whole grows by
50 MiB or more. The control test shows the probe sees it, by reading with ``store.read()``.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mailserver.blob.s3 import S3BlobStore, S3Config
from tests.support.blob_memory_probe import stream_digest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
SIZE = 50 * 1024 * 1024
SAVE_BOUND_KIB = 40 * 1024
READ_BOUND_KIB = 8 * 1024
BUCKET = "large-messages"


@pytest.fixture(scope="module")
def probe_env(stack, unique):
    env = {**os.environ, **stack.to_env(), "S3_BUCKET_PREFIX": f"t{unique}-", "S3_DEFAULT_BUCKET": f"t{unique}-default"}
    store = S3BlobStore(S3Config.from_env(env))
    store.delete_bucket(BUCKET)  # the save must really upload, not find the content already there
    yield env
    store.delete_bucket(BUCKET)


@pytest.fixture(scope="module")
def expected_digest() -> bytes:
    return stream_digest(SIZE)


def run_probe(env: dict[str, str], *args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "tests.support.blob_memory_probe", *args], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"probe {args[0]} failed:\n{result.stdout[-2000:]}{result.stderr[-4000:]}"
    report = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"\n[memory] {report['mode']}: peak RSS {report['before_kib'] / 1024:.1f} -> "
          f"{report['after_kib'] / 1024:.1f} MiB, growth {report['growth_kib'] / 1024:.1f} MiB")
    return report


@pytest.fixture(scope="module")
def saved(probe_env) -> dict:
    return run_probe(probe_env, "save", BUCKET, str(SIZE))


def test_saving_a_50mb_message_stays_below_40mib_of_growth(saved, expected_digest):
    # James's generation-aware id <family>_<generation>_<hash>: the content was hashed whole while streamed
    assert saved["blob_id"].endswith("_" + base64.urlsafe_b64encode(expected_digest).decode())
    assert saved["growth_kib"] < SAVE_BOUND_KIB, f"save grew the peak RSS by {saved['growth_kib']} KiB"


def test_reading_it_back_in_1mib_chunks_stays_below_8mib_of_growth(probe_env, saved, expected_digest):
    read = run_probe(probe_env, "read", BUCKET, saved["blob_id"])
    assert read["sha256"] == expected_digest.hex()
    assert read["growth_kib"] < READ_BOUND_KIB, f"read grew the peak RSS by {read['growth_kib']} KiB"


def test_the_probe_sees_a_message_held_whole(probe_env, saved, expected_digest):
    whole = run_probe(probe_env, "read-whole", BUCKET, saved["blob_id"])
    assert whole["sha256"] == expected_digest.hex()
    # About the message size (freed memory of the warm-up is reused), above both bounds.
    assert whole["growth_kib"] > 0.9 * SIZE / 1024 > SAVE_BOUND_KIB > READ_BOUND_KIB
