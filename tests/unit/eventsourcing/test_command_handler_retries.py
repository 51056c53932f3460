"""CommandHandler: a conflicting append is decided again on the fresh history, a bounded number of times."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mailserver.eventsourcing.aggregate import CommandHandler, NewEvent, TooManyRetries
from mailserver.eventsourcing.api import Event, EventStoreConflict, History
from mailserver.eventsourcing.memory import MemoryEventStore


class ConflictingStore(MemoryEventStore):
    """Refuses the first ``conflicts`` appends, as when another writer got there first."""

    def __init__(self, conflicts: int) -> None:
        super().__init__()
        self.conflicts, self.appends = conflicts, 0

    def append_all(self, aggregate_id: str, events: Sequence[Event], expected_version: int | None) -> None:
        self.appends += 1
        if self.appends <= self.conflicts:
            raise EventStoreConflict(aggregate_id, expected_version)
        super().append_all(aggregate_id, events, expected_version)


def decide(history: History, command: str) -> list[NewEvent]:
    return [NewEvent(command)]


def test_a_conflict_is_retried_and_subscribers_see_the_stored_events_once():
    store, seen = ConflictingStore(conflicts=2), []
    events = CommandHandler(store, decide, max_retries=2, subscribers=[seen.append]).handle("a", "created")
    assert [e.type for e in events] == ["created"] and seen == events
    assert store.appends == 3 and [e.type for e in store.get_history("a").events] == ["created"]


def test_conflicts_beyond_the_retries_raise_too_many_retries():
    store, seen = ConflictingStore(conflicts=3), []
    with pytest.raises(TooManyRetries, match="'a': still conflicting after 2 retries"):
        CommandHandler(store, decide, max_retries=2, subscribers=[seen.append]).handle("a", "created")
    assert store.appends == 3 and seen == []
