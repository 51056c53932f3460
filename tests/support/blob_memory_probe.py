"""Peak memory of saving or reading one large blob on S3, measured in a fresh process.

Run by tests/integration/blob/test_s3_large_blob_memory.py, so that pytest's own memory does
not pollute the figure. The S3 store is configured from the environment (``S3Config.from_env``).

    python -m tests.support.blob_memory_probe save BUCKET SIZE_BYTES
    python -m tests.support.blob_memory_probe read BUCKET BLOB_ID
    python -m tests.support.blob_memory_probe read-whole BUCKET BLOB_ID   # the control: store.read()

Prints one JSON object: the peak RSS (KiB, see ``peak_kib``) after a small warm-up save and read
(so imports and connections are paid for) and after the measured operation, the blob id and
the SHA-256 of what was saved or read.
"""

from __future__ import annotations

import hashlib
import json
import random
import resource
import sys
from collections.abc import Iterator

CHUNK = 64 * 1024
READ_CHUNK = 1024 * 1024
SEED = 20260501


def message_stream(size: int, seed: int = SEED) -> Iterator[bytes]:
    """``size`` pseudo-random bytes, reproducible, in 64 KiB chunks: never one big bytes object."""
    rng = random.Random(seed)  # test data, reproducible: not for secrets
    header = b"From: probe@example.com\r\nSubject: large\r\n\r\n"
    yield header[:size]
    remaining = size - min(size, len(header))
    while remaining > 0:
        chunk = rng.randbytes(min(CHUNK, remaining))
        remaining -= len(chunk)
        yield chunk


def stream_digest(size: int, seed: int = SEED) -> bytes:
    digest = hashlib.sha256()
    for chunk in message_stream(size, seed):
        digest.update(chunk)
    return digest.digest()


def peak_kib() -> int:
    """Peak RSS of this process's address space (``VmHWM``), in KiB.

    Not ``ru_maxrss`` alone: Linux carries the peak of the address space an exec replaced into
    ``ru_maxrss``, so a process started from pytest reports pytest's peak (150+ MiB) and never
    moves. ``VmHWM`` starts afresh at exec; ``ru_maxrss`` is reported beside it for reference.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def main(argv: list[str]) -> dict:
    from mailserver.blob.s3 import S3BlobStore, S3Config

    mode, bucket, arg = argv
    # Deduplicating: the id carries the SHA-256 the save computed while streaming (checked by the test).
    store = S3BlobStore(S3Config.from_env(), deduplication=True)
    warm = store.save(bucket, b"warm-up " * 128)
    with store.read_stream(bucket, warm) as stream:
        stream.read(READ_CHUNK)
    before, maxrss_before = peak_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    digest = hashlib.sha256()
    if mode == "save":
        blob_id = str(store.save(bucket, message_stream(int(arg))))
    elif mode == "read":
        blob_id = arg
        with store.read_stream(bucket, blob_id) as stream:
            while chunk := stream.read(READ_CHUNK):
                digest.update(chunk)
    elif mode == "read-whole":
        blob_id = arg
        digest.update(store.read(bucket, blob_id))
    else:
        raise SystemExit(f"unknown mode {mode}")
    after, maxrss_after = peak_kib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"mode": mode, "before_kib": before, "after_kib": after, "growth_kib": after - before,
            "ru_maxrss_before_kib": maxrss_before, "ru_maxrss_after_kib": maxrss_after,
            "blob_id": blob_id, "sha256": None if mode == "save" else digest.hexdigest()}

if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
