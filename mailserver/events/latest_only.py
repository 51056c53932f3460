"""Run an action per key so that requests arriving during a run fold into one more run after it.

Why: the current-quota listener publishes the root's usage after each change it counts. Under
load the event bus runs several changes of one user at once, and each published its own
``QuotaUsageUpdatedEvent`` (a confirmed publish, a delivery and an acknowledgement, and a read of
the usage: issue 16). What the event's consumers need is the usage as it is now, so a change
counted while a publication of the same root is under way needs no publication of its own: the
thread publishing reads the usage again and publishes once more when it is done.

The last publication of a key always starts after the last request for it, so the newest usage
is always published. A caller whose request was folded returns at once; the caller that runs the
action returns when no request is left, or raises the action's failure (its event is then retried
by the bus, and that retry publishes the usage as it is then).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class LatestOnly(Generic[K]):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._again: dict[K, bool] = {}   # keys being run -> whether a request came meanwhile
        self.folded = 0                   # requests taken by a run in progress (tests)

    def run(self, key: K, action: Callable[[], None]) -> bool:
        """Run ``action`` for ``key``, or leave it to the run in progress; True when this caller ran it."""
        with self._lock:
            if key in self._again:
                self._again[key] = True
                self.folded += 1
                return False
            self._again[key] = False
        try:
            while True:
                action()
                with self._lock:
                    if not self._again[key]:
                        del self._again[key]
                        return True
                    self._again[key] = False
        except BaseException:
            with self._lock:
                self._again.pop(key, None)
            raise
