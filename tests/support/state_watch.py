"""A state read again and again in the background while something runs, each reading with its time.

"Maintenance mode stayed off" holds only if it was looked at while the run ran, not just before and
after: ``StateWatch`` reads WebAdmin's state every ``interval`` seconds in a thread, so a test can ask
what was seen between two instants (a task's start and end, as Airflow recorded them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


@dataclass(frozen=True)
class Reading:
    at: datetime       # UTC, when the answer came back
    state: Any


@dataclass
class StateWatch:
    read: Callable[[], Any]
    interval: float = 0.5
    readings: list[Reading] = field(default_factory=list)
    failures: list[tuple[datetime, Exception]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> StateWatch:
        self._thread = threading.Thread(target=self._watch, name="state-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                state = self.read()
            except Exception as exc:   # a slow or refused answer is kept, and reading goes on
                self.failures.append((datetime.now(UTC), exc))
            else:
                self.readings.append(Reading(datetime.now(UTC), state))
            self._stop.wait(self.interval)

    def states(self) -> list[Any]:
        return [r.state for r in self.readings]

    def between(self, start: datetime, end: datetime) -> list[Reading]:
        return [r for r in self.readings if start <= r.at <= end]
