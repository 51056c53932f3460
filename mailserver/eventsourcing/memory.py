"""In-memory event store, for unit tests and single-process use."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from mailserver.eventsourcing.api import Event, EventStore, EventStoreConflict, History, check_append


class MemoryEventStore(EventStore):
    def __init__(self) -> None:
        self._events: dict[str, list[Event]] = {}
        self._lock = threading.Lock()

    def append_all(self, aggregate_id: str, events: Sequence[Event], expected_version: int | None) -> None:
        if not events:
            return
        check_append(aggregate_id, events, expected_version)
        with self._lock:
            stored = self._events.setdefault(aggregate_id, [])
            version = stored[-1].event_id if stored else None
            if version != expected_version:
                raise EventStoreConflict(aggregate_id, expected_version)
            stored.extend(events)

    def get_history(self, aggregate_id: str) -> History:
        with self._lock:
            stored = list(self._events.get(aggregate_id, ()))
        start = max((i for i, e in enumerate(stored) if e.snapshot), default=0)
        return History.of(stored[start:])

    def remove(self, aggregate_id: str) -> None:
        with self._lock:
            self._events.pop(aggregate_id, None)
