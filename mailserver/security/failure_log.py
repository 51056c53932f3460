"""Where authentication failures are remembered: a port and its in-memory adapter.

A key (an address, an account, an account at an address) maps to the times of its recent
failures, oldest first. The throttle only ever needs the last few of them (enough to know
whether a limit is reached and when the oldest counted one expires), so each key keeps at most
``keep`` times, and the adapter at most ``max_keys`` keys: a client spraying addresses or
account names makes the least recently used counters be forgotten, never the memory grow.

The memory adapter is one per process and shared by its protocols (the roles of ``mailserver
serve`` run in one process); its lock makes it safe to use from their event-loop threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Protocol


class FailureLog(Protocol):
    def recent(self, key: str, since: float) -> list[float]:
        """Times of the failures of ``key`` after ``since``, oldest first (at most ``keep`` of them)."""

    def add(self, keys: Iterable[str], at: float) -> None:
        """A failure at time ``at`` for each of ``keys``."""

    def forget(self, key: str) -> None:
        """Drop the failures of ``key``."""


class MemoryFailureLog:
    def __init__(self, *, keep: int, max_keys: int) -> None:
        if keep < 1 or max_keys < 1:
            raise ValueError("keep and max_keys must be >= 1")
        self.keep = keep
        self.max_keys = max_keys
        self._times: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()

    def recent(self, key: str, since: float) -> list[float]:
        with self._lock:
            times = self._times.get(key)
            if times is None:
                return []
            first = next((i for i, t in enumerate(times) if t > since), len(times))
            if first == len(times):
                del self._times[key]
                return []
            del times[:first]
            return list(times)

    def add(self, keys: Iterable[str], at: float) -> None:
        with self._lock:
            for key in keys:
                times = self._times.get(key)
                if times is None:
                    times = self._times[key] = []
                else:
                    self._times.move_to_end(key)
                times.append(at)
                del times[:-self.keep]
            while len(self._times) > self.max_keys:
                self._times.popitem(last=False)

    def forget(self, key: str) -> None:
        with self._lock:
            self._times.pop(key, None)

    def __len__(self) -> int:
        return len(self._times)
