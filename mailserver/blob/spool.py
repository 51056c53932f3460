"""Content to save, read once: hashed while copied to a spool the adapters can re-read.

The id of deduplicated content is its SHA-256, known only at the end of the input, and an
upload may need to be replayed (lazily created bucket, retried part): so streaming input is
copied to a ``SpooledTemporaryFile`` that stays in memory up to ``SPOOL_IN_MEMORY`` bytes and
goes to disk past it. A 50 MB message is therefore never held whole in memory.
"""

from __future__ import annotations

import hashlib
import io
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

CHUNK = 64 * 1024
SPOOL_IN_MEMORY = 1024 * 1024


@dataclass
class Spooled:
    file: BinaryIO      # positioned at 0, readable and seekable
    size: int
    sha256: bytes       # the digest

    def close(self) -> None:
        self.file.close()

    def __enter__(self) -> Spooled:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _checked(chunk: Any) -> bytes | bytearray | memoryview:
    if not isinstance(chunk, bytes | bytearray | memoryview):
        raise TypeError(f"blob content must be bytes, got a chunk of type {type(chunk).__name__}")
    return chunk


def iter_chunks(data: Any) -> Iterator[bytes | bytearray | memoryview]:
    """Chunks of bytes | binary file object | iterable of bytes; TypeError for anything else."""
    if isinstance(data, bytes | bytearray | memoryview):
        yield data
    elif hasattr(data, "read"):
        while chunk := _checked(data.read(CHUNK)):
            yield chunk
    elif isinstance(data, Iterable) and not isinstance(data, str):
        for chunk in data:
            yield _checked(chunk)
    else:
        raise TypeError(f"blob content must be bytes, a binary file or an iterable of bytes, "
                        f"not {type(data).__name__}")


def spool(data: Any) -> Spooled:
    if isinstance(data, bytes | bytearray | memoryview):  # already in memory: no copy to spool
        payload = bytes(data)
        return Spooled(io.BytesIO(payload), len(payload), hashlib.sha256(payload).digest())
    file = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # closed by Spooled
    try:
        digest, size = hashlib.sha256(), 0
        for chunk in iter_chunks(data):
            digest.update(chunk)
            size += file.write(chunk)
        file.seek(0)
        return Spooled(file, size, digest.digest())  # type: ignore[arg-type]
    except BaseException:
        file.close()
        raise
