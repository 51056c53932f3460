"""A rate limiter for repair writes: at most ``rate`` operations per second, on average.

James throttles its tasks with fixed one-second windows; a token bucket gives the same
average without the bursts at each window start. The rate of a job is split across the
partitions that run at once, so the whole job stays under what the operator asked for.

A limiter may be shared by threads (a partition repairing several items at once): ``acquire`` is
serialized by a lock, held while a caller waits for its token, so waiting callers are let through
one by one at the rate, never together.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimiter:
    def __init__(self, rate: float | None, *, burst: float | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        if rate is not None and rate <= 0:
            raise ValueError("rate must be positive (None means unlimited)")
        self.rate = rate
        self.capacity = burst if burst is not None else max(1.0, rate or 1.0)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.capacity
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self, count: int = 1) -> None:
        """Block until ``count`` operations may run (thread-safe). A batch larger than the burst waits for
        the whole of it, so batches of any size keep the same average rate as single operations."""
        if self.rate is None or count <= 0:
            return
        with self._lock:
            self._take(count)

    def _take(self, count: int) -> None:
        assert self.rate is not None
        now = self._clock()
        self._tokens = min(self.capacity, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens < count:
            wait = (count - self._tokens) / self.rate
            self._sleep(wait)
            self._last = self._clock()
            self._tokens = 0.0
        else:
            self._tokens -= count


def share(rate: float | None, parallel_partitions: int) -> float | None:
    """The rate one of ``parallel_partitions`` concurrent partitions may use."""
    if rate is None:
        return None
    return rate / max(1, parallel_partitions)
