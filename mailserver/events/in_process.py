"""Synchronous in-process bus: every group listener runs before ``dispatch`` returns.

Used until the RabbitMQ bus exists, and in unit tests. A failing listener does not stop the
others nor the caller (as on James's bus, the mailbox operation already happened); the event
is retried ``retries`` times, then kept as a dead letter for that group.
"""

from __future__ import annotations

import logging

from mailserver.events.api import DeadLetter, EventBus, EventListener
from mailserver.model.events import MailboxEvent

log = logging.getLogger(__name__)


class InProcessEventBus(EventBus):
    def __init__(self, retries: int = 2) -> None:
        self.listeners: list[EventListener] = []
        self.dead_letters: list[DeadLetter] = []
        self.retries = retries

    def register(self, listener: EventListener) -> None:
        if any(existing.group == listener.group for existing in self.listeners):
            raise ValueError(f"a listener of group {listener.group!r} is already registered")
        self.listeners.append(listener)

    def dispatch(self, *events: MailboxEvent) -> None:
        for event in events:
            for listener in self.listeners:
                if listener.accepts(event):
                    self._deliver(listener, event)

    def _deliver(self, listener: EventListener, event: MailboxEvent) -> None:
        last: Exception | None = None
        for _attempt in range(self.retries + 1):
            try:
                listener.handle(event)
                return
            except Exception as exc:  # a listener bug must not break the mailbox operation
                last = exc
        log.error("listener group %s failed on %s %s: %s", listener.group, event.type_name, event.event_id, last)
        self.dead_letters.append(DeadLetter(listener.group, event, repr(last)))


class RecordingListener(EventListener):
    """Keeps every event it sees (tests, debugging)."""

    group = "RecordingListener"

    def __init__(self) -> None:
        self.events: list[MailboxEvent] = []

    def handle(self, event: MailboxEvent) -> None:
        self.events.append(event)

    def of_type(self, event_type: type) -> list:
        return [e for e in self.events if isinstance(e, event_type)]
