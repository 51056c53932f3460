"""The event store port: one ordered event history per aggregate, appended with optimistic concurrency.

Event ids are dense (0, 1, 2, ...) per aggregate. A writer reads the history, decides new events
numbered from ``version + 1`` and appends them with that ``expected_version``; when another writer
appended first, the ids are taken and the append fails with ``EventStoreConflict`` (James's
conditional inserts), so the writer re-reads and decides again.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# Keys James's event DTOs carry next to the event fields; a payload must not shadow them.
RESERVED_KEYS = frozenset({"type", "eventId", "aggregateId"})


class EventStoreConflict(Exception):
    """Another writer appended to the aggregate since the expected version was read."""

    def __init__(self, aggregate_id: str, expected_version: int | None) -> None:
        super().__init__(f"concurrent update of aggregate {aggregate_id!r} (expected version {expected_version})")
        self.aggregate_id = aggregate_id
        self.expected_version = expected_version


@dataclass(frozen=True)
class Event:
    aggregate_id: str
    event_id: int
    type: str
    payload: Mapping[str, Any] = field(default_factory=dict)
    # A snapshot summarises every earlier event: histories are then read from it on.
    snapshot: bool = False

    def __post_init__(self) -> None:
        if not self.aggregate_id:
            raise ValueError("aggregate_id must not be empty")
        if self.event_id < 0:
            raise ValueError(f"event_id must be >= 0, got {self.event_id}")
        if not self.type:
            raise ValueError("event type must not be empty")
        clash = RESERVED_KEYS & set(self.payload)
        if clash:
            raise ValueError(f"payload keys {sorted(clash)} are reserved")

    def to_json(self) -> str:
        """The ``event`` column: a flat JSON object with ``type`` and ``eventId``, as James stores its DTOs."""
        return DEFAULT_JSON.dumps(self)

    @classmethod
    def from_json(cls, aggregate_id: str, event_id: int, text: str, *, snapshot: bool = False) -> Event:
        return DEFAULT_JSON.loads(aggregate_id, event_id, text, snapshot=snapshot)


@dataclass(frozen=True)
class EventJson:
    """How an aggregate's events are written in the ``event`` column: the names of the envelope keys.

    James's DTOs differ per aggregate: most carry ``eventId`` and ``aggregateId``; the task events
    carry ``event`` and ``aggregate`` (the task id alone, without the ``Task/`` key prefix). James
    parses them strictly (unknown keys fail), so an aggregate's events must keep its own shape.
    """

    event_id_key: str = "eventId"
    aggregate_key: str = "aggregateId"
    aggregate_prefix: str = ""   # stripped from the aggregate id written in the JSON

    def dumps(self, event: Event) -> str:
        clash = {self.event_id_key, self.aggregate_key} & set(event.payload)
        if clash:
            raise ValueError(f"payload keys {sorted(clash)} are reserved")
        return json.dumps({"type": event.type, self.event_id_key: event.event_id,
                           self.aggregate_key: event.aggregate_id.removeprefix(self.aggregate_prefix),
                           **event.payload}, separators=(",", ":"))

    def loads(self, aggregate_id: str, event_id: int, text: str, *, snapshot: bool = False) -> Event:
        """Ids come from the row's key (authoritative); the remaining JSON fields are the payload."""
        data = json.loads(text)
        event_type = data.pop("type")
        for key in RESERVED_KEYS | {self.event_id_key, self.aggregate_key}:
            data.pop(key, None)
        return Event(aggregate_id, event_id, event_type, data, snapshot)


DEFAULT_JSON = EventJson()


@dataclass(frozen=True)
class History:
    events: tuple[Event, ...] = ()
    version: int | None = None   # id of the last event, None for an aggregate without events

    @classmethod
    def of(cls, events: Sequence[Event]) -> History:
        return cls(tuple(events), events[-1].event_id if events else None)

    @property
    def next_event_id(self) -> int:
        return 0 if self.version is None else self.version + 1


def check_append(aggregate_id: str, events: Sequence[Event], expected_version: int | None) -> None:
    """Events of one append belong to the aggregate and continue its history without gaps."""
    first = 0 if expected_version is None else expected_version + 1
    for offset, event in enumerate(events):
        if event.aggregate_id != aggregate_id:
            raise ValueError(f"event of aggregate {event.aggregate_id!r} appended to {aggregate_id!r}")
        if event.event_id != first + offset:
            raise ValueError(f"event id {event.event_id} where {first + offset} was expected "
                             f"(expected version {expected_version})")


class EventStore(ABC):
    @abstractmethod
    def append_all(self, aggregate_id: str, events: Sequence[Event], expected_version: int | None) -> None:
        """Append atomically, or raise ``EventStoreConflict`` when the ids are already taken."""

    def append(self, event: Event, expected_version: int | None) -> None:
        self.append_all(event.aggregate_id, [event], expected_version)

    @abstractmethod
    def get_history(self, aggregate_id: str) -> History:
        """Events from the latest snapshot on (all of them without snapshot), in id order."""

    @abstractmethod
    def remove(self, aggregate_id: str) -> None:
        """Forget an aggregate (James's tasks cleanup)."""
