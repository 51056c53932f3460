"""Event sourcing: aggregates whose state is the fold of an append-only event history (James's eventStore)."""

from mailserver.eventsourcing.api import Event, EventStore, EventStoreConflict, History

__all__ = ["Event", "EventStore", "EventStoreConflict", "History"]
