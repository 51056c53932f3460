"""Which events a listener group already applied: makes a counting listener safe to redeliver.

The bus is at-least-once: a listener process killed after its write but before its ack sees the
event again, and a counter listener (current quota) would count it twice. Such a listener checks
the ledger first and marks the event once applied. A crash between the write and the mark still
double-counts; that window is milliseconds wide where the unacknowledged one was the whole
handling, and the quota recomputation procedure repairs it (docs/compatibility.md).
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod

from mailserver.cassandra.session import CassandraSession


class ProcessedEvents(ABC):
    @abstractmethod
    def applied(self, group: str, event_id: uuid.UUID) -> bool: ...

    @abstractmethod
    def mark_applied(self, group: str, event_id: uuid.UUID) -> None: ...


class MemoryProcessedEvents(ProcessedEvents):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: set[tuple[str, uuid.UUID]] = set()

    def applied(self, group: str, event_id: uuid.UUID) -> bool:
        with self._lock:
            return (group, event_id) in self._seen

    def mark_applied(self, group: str, event_id: uuid.UUID) -> None:
        with self._lock:
            self._seen.add((group, event_id))


class CassandraProcessedEvents(ProcessedEvents):
    """``event_processed``: one row per (group, event), expiring with the table's default TTL."""

    def __init__(self, session: CassandraSession) -> None:
        self.session = session

    def applied(self, group: str, event_id: uuid.UUID) -> bool:
        return self.session.one('SELECT "group" FROM event_processed WHERE "group" = ? AND eventId = ?',
                                (group, event_id)) is not None

    def mark_applied(self, group: str, event_id: uuid.UUID) -> None:
        self.session.execute('INSERT INTO event_processed ("group", eventId) VALUES (?, ?)', (group, event_id))
