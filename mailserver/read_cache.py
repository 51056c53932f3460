"""A thread-safe read-through cache with a time to live: the domain list's and the quota limits'.

The loader runs outside the lock (it is a Cassandra read): two threads missing the same key may
both read it, which is cheaper than serialising every miss. ``forget`` drops a key its owner
has just written, so the writer's next read sees the new value at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from cachetools import TTLCache

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class ReadThroughCache(Generic[K, V]):
    def __init__(self, *, ttl: float, max_entries: int, clock: Callable[[], float] = time.monotonic,
                 what: str = "cache") -> None:
        if ttl <= 0:
            raise ValueError(f"the {what}'s time to live must be positive (disable the cache instead)")
        self._entries: TTLCache[K, V] = TTLCache(maxsize=max_entries, ttl=ttl, timer=clock)
        self._lock = threading.Lock()

    def get(self, key: K, load: Callable[[K], V], *, keep: Callable[[V], bool] | None = None) -> V:
        """The cached value, else ``load(key)``, cached unless ``keep`` says otherwise."""
        with self._lock:
            known = self._entries.get(key)
        if known is not None:
            return known
        value = load(key)
        if keep is None or keep(value):
            with self._lock:
                self._entries[key] = value
        return value

    def forget(self, key: K) -> None:
        with self._lock:
            self._entries.pop(key, None)
