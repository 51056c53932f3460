"""The event dead letters port (James's ``EventDeadLetters``) and its memory adapter.

A dead letter is an event a listener group failed to handle after its retries, or an event whose
publication failed (stored under the bus's dispatching-failure group). Events are kept as their
James JSON text: a dead letter written by a Java node, or of an event type this code does not
know, can still be listed, shown, deleted and republished.
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass

from mailserver.model.events import MailboxEvent, deserialize_event, serialize_event


@dataclass(frozen=True)
class DeadLetter:
    group: str
    insertion_id: uuid.UUID
    event_json: str

    def event(self) -> MailboxEvent:
        return deserialize_event(self.event_json)


class EventDeadLetters(ABC):
    @abstractmethod
    def store_json(self, group: str, event_json: str) -> uuid.UUID:
        """Keep an event for a group; returns its insertion id (a time-based UUID, as James)."""

    def store(self, group: str, event: MailboxEvent) -> uuid.UUID:
        return self.store_json(group, serialize_event(event))

    @abstractmethod
    def get(self, group: str, insertion_id: uuid.UUID) -> DeadLetter | None: ...

    @abstractmethod
    def insertion_ids(self, group: str) -> list[uuid.UUID]:
        """Ids of a group's dead letters, oldest first."""

    @abstractmethod
    def groups(self) -> list[str]:
        """Groups that have (or had: as James, the group table is not cleaned) dead letters."""

    @abstractmethod
    def remove(self, group: str, insertion_id: uuid.UUID) -> None:
        """Forget one dead letter (idempotent)."""

    @abstractmethod
    def remove_group(self, group: str) -> None:
        """Forget every dead letter of a group, and the group."""

    @abstractmethod
    def contain_events(self) -> bool:
        """Whether any group holds a dead letter: one cheap read, for the health check."""

    def letters(self, group: str) -> Iterable[DeadLetter]:
        for insertion_id in self.insertion_ids(group):
            letter = self.get(group, insertion_id)
            if letter is not None:    # removed in between
                yield letter


class MemoryEventDeadLetters(EventDeadLetters):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._groups: dict[str, dict[uuid.UUID, str]] = {}

    def store_json(self, group: str, event_json: str) -> uuid.UUID:
        if not group:
            raise ValueError("a dead letter needs a group")
        insertion_id = uuid.uuid1()
        with self._lock:
            self._groups.setdefault(group, {})[insertion_id] = event_json
        return insertion_id

    def get(self, group: str, insertion_id: uuid.UUID) -> DeadLetter | None:
        with self._lock:
            text = self._groups.get(group, {}).get(insertion_id)
        return None if text is None else DeadLetter(group, insertion_id, text)

    def insertion_ids(self, group: str) -> list[uuid.UUID]:
        with self._lock:
            return list(self._groups.get(group, {}))

    def groups(self) -> list[str]:
        with self._lock:
            return sorted(self._groups)

    def remove(self, group: str, insertion_id: uuid.UUID) -> None:
        with self._lock:
            self._groups.get(group, {}).pop(insertion_id, None)

    def remove_group(self, group: str) -> None:
        with self._lock:
            self._groups.pop(group, None)

    def contain_events(self) -> bool:
        with self._lock:
            return any(self._groups.values())

    def __len__(self) -> int:
        with self._lock:
            return sum(len(letters) for letters in self._groups.values())
