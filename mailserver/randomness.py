"""Random identifiers (uuid4, session ids, mail names) from the OS's CSPRNG, 4 KiB per system call.

Why: ``os.urandom`` (behind ``uuid.uuid4`` and ``secrets``) gives up the GIL for its
``getrandom`` call and must win it back afterwards. A mail draws about ten identifiers (blob
ids, its enqueue id, event ids, its name, the SMTP session's id), and under load each of those
hand-offs made the drawing thread wait behind the others: the SMTP event loop spent a tenth of
its time there (issue 16). Here one call fills a buffer that serves 256 identifiers.

The bytes are the kernel's, as before; they only wait in memory until drawn. A forked child
starts with an empty buffer, so parent and child never hand out the same bytes. Secrets that
protect something (password salts, tokens) keep using ``secrets`` directly.
"""

from __future__ import annotations

import os
import threading
import uuid

_REFILL = 4096


class _Pool:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffer = b""
        self._taken = 0

    def take(self, n: int) -> bytes:
        with self._lock:
            if self._taken + n > len(self._buffer):
                self._buffer, self._taken = os.urandom(max(_REFILL, n)), 0
            start = self._taken
            self._taken += n
            return self._buffer[start:self._taken]

    def forget(self) -> None:
        self._lock = threading.Lock()   # a lock held by another thread at fork stays held in the child
        self._buffer, self._taken = b"", 0


_pool = _Pool()
os.register_at_fork(after_in_child=_pool.forget)


def token_bytes(n: int) -> bytes:
    return _pool.take(n)


def token_hex(n: int) -> str:
    return _pool.take(n).hex()


def randbits(k: int) -> int:
    """A non-negative int of ``k`` random bits."""
    if k <= 0:
        raise ValueError("the number of bits must be positive")
    return int.from_bytes(_pool.take((k + 7) // 8), "big") >> (-k % 8)


def uuid4() -> uuid.UUID:
    return uuid.UUID(bytes=_pool.take(16), version=4)
