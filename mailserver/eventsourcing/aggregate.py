"""A generic command handler: load the history, decide events, append at the expected version, retry.

James's ``EventSourcingSystem``: the decision is a pure function of the history and the command;
on a conflict the history is re-read and the decision taken again, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from mailserver.eventsourcing.api import Event, EventStore, EventStoreConflict, History

C = TypeVar("C")


class NewEvent(NamedTuple):
    type: str
    payload: Mapping[str, Any] = {}
    snapshot: bool = False


class TooManyRetries(RuntimeError):
    pass


Decide = Callable[[History, C], Sequence[NewEvent]]
Subscriber = Callable[[Event], None]


class CommandHandler(Generic[C]):
    def __init__(self, store: EventStore, decide: Decide[C], *, max_retries: int = 10,
                 subscribers: Iterable[Subscriber] = ()) -> None:
        self.store = store
        self.decide = decide
        self.max_retries = max_retries
        self.subscribers = list(subscribers)

    def handle(self, aggregate_id: str, command: C) -> list[Event]:
        """The appended events (possibly none); subscribers see them only once stored."""
        for _ in range(self.max_retries + 1):
            history = self.store.get_history(aggregate_id)
            events = [Event(aggregate_id, history.next_event_id + i, e.type, dict(e.payload), e.snapshot)
                      for i, e in enumerate(self.decide(history, command))]
            try:
                self.store.append_all(aggregate_id, events, history.version)
            except EventStoreConflict:
                continue
            for event in events:
                for subscriber in self.subscribers:
                    subscriber(event)
            return events
        raise TooManyRetries(f"aggregate {aggregate_id!r}: still conflicting after {self.max_retries} retries")
