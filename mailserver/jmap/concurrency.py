"""``maxConcurrentRequests``: how many API requests of one user may run at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from mailserver.model.address import Username


class TooManyRequests(Exception):
    pass


class ConcurrentRequests:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._running: dict[Username, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def slot(self, user: Username) -> Iterator[None]:
        """Hold one of the user's slots while the request runs; TooManyRequests when none is free."""
        with self._lock:
            running = self._running.get(user, 0)
            if running >= self.limit:
                raise TooManyRequests
            self._running[user] = running + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._running[user] - 1
                if left:
                    self._running[user] = left
                else:
                    del self._running[user]

    def running(self, user: Username) -> int:
        with self._lock:
            return self._running.get(user, 0)
