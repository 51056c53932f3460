"""A generic command handler: load the history, decide events, append at the expected version, retry.

James's ``EventSourcingSystem``: the decision is a pure function of the history and the command;
on a conflict the history is re-read and the decision taken again, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, TypeVar

from tenacity import RetryCallState, retry, retry_if_exception_type, stop_after_attempt

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
        # No wait between attempts: a conflict means another writer appended, so the next read sees it.
        self._append_decided = retry(retry=retry_if_exception_type(EventStoreConflict),
                                     stop=stop_after_attempt(max_retries + 1),
                                     retry_error_callback=self._too_many_retries)(self._decide_and_append)

    def handle(self, aggregate_id: str, command: C) -> list[Event]:
        """The appended events (possibly none); subscribers see them only once stored."""
        events = self._append_decided(aggregate_id, command)
        for event in events:
            for subscriber in self.subscribers:
                subscriber(event)
        return events

    def _decide_and_append(self, aggregate_id: str, command: C) -> list[Event]:
        history = self.store.get_history(aggregate_id)
        events = [Event(aggregate_id, history.next_event_id + i, e.type, dict(e.payload), e.snapshot)
                  for i, e in enumerate(self.decide(history, command))]
        self.store.append_all(aggregate_id, events, history.version)
        return events

    def _too_many_retries(self, state: RetryCallState) -> list[Event]:
        aggregate_id = state.args[0]
        raise TooManyRetries(f"aggregate {aggregate_id!r}: still conflicting after {self.max_retries} retries")
