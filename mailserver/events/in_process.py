"""Synchronous in-process bus: every group listener runs before ``dispatch`` returns.

For unit tests and single-process tools, behind the same port as the RabbitMQ bus (one contract
suite runs on both). Key listeners run after the groups, for each key of the event; they see
only this process's dispatches: ``key_delivery_live`` is False unless ``sees_every_writer`` says
that every writer of the mailboxes dispatches here (a single-process setup, tests). A failing group listener does
not stop the others nor the caller (as on James's bus, the mailbox operation already happened);
the event is retried ``retries`` times, then kept as a dead letter of that group, in the dead
letters given (memory by default).
"""

from __future__ import annotations

import logging

from mailserver.events.api import EventBus, EventListener, Registration
from mailserver.events.dead_letters import EventDeadLetters, MemoryEventDeadLetters
from mailserver.events.key_listeners import KeyRegistration, LocalKeyListeners
from mailserver.events.naming import BusNames
from mailserver.events.registration_keys import RegistrationKey, keys_of
from mailserver.model.events import MailboxEvent, deserialize_event

log = logging.getLogger(__name__)


class InProcessEventBus(EventBus):
    def __init__(self, retries: int = 2, dead_letters: EventDeadLetters | None = None,
                 names: BusNames | None = None, sees_every_writer: bool = False) -> None:
        self.listeners: list[EventListener] = []
        self.dead_letters = dead_letters if dead_letters is not None else MemoryEventDeadLetters()
        self.retries = retries
        self.names = names or BusNames()
        self.key_listeners = LocalKeyListeners()
        self.sees_every_writer = sees_every_writer

    @property
    def groups(self) -> list[str]:
        return [listener.group for listener in self.listeners]

    def register(self, listener: EventListener) -> None:
        if any(existing.group == listener.group for existing in self.listeners):
            raise ValueError(f"a listener of group {listener.group!r} is already registered")
        self.listeners.append(listener)

    def register_key(self, listener: EventListener, key: RegistrationKey) -> Registration:
        self.key_listeners.add(key, listener)
        return KeyRegistration(lambda: self.key_listeners.remove(key, listener))

    def key_delivery_live(self) -> bool:
        return self.sees_every_writer

    def key_delivery_epoch(self) -> int | None:
        return 0 if self.sees_every_writer else None

    def dispatch(self, *events: MailboxEvent) -> None:
        for event in events:
            for listener in self.listeners:
                if listener.accepts(event):
                    self._deliver(listener, event)
            for key in keys_of(event):
                self.key_listeners.run(key, event)

    def dispatch_to_keys(self, *events: MailboxEvent) -> None:
        for event in events:
            for key in keys_of(event):
                self.key_listeners.run(key, event)

    def redeliver(self, group: str, event_json: str) -> None:
        event = deserialize_event(event_json)
        if group == self.names.dispatching_failure_group:
            for listener in self.listeners:   # to every group, not to key listeners (as James)
                if listener.accepts(event):
                    self._deliver(listener, event)
            return
        for listener in self.listeners:
            if listener.group == group and listener.accepts(event):
                self._deliver(listener, event)
                return
        if all(listener.group != group for listener in self.listeners):
            raise ValueError(f"no listener of group {group!r} is registered")

    def _deliver(self, listener: EventListener, event: MailboxEvent) -> None:
        last: Exception | None = None
        for _attempt in range(self.retries + 1):
            try:
                listener.handle(event)
                return
            except Exception as exc:  # a listener bug must not break the mailbox operation
                last = exc
        log.error("listener group %s failed on %s %s: %s", listener.group, event.type_name, event.event_id, last)
        self.dead_letters.store(listener.group, event)


class RecordingListener(EventListener):
    """Keeps every event it sees (tests, debugging)."""

    group = "RecordingListener"

    def __init__(self) -> None:
        self.events: list[MailboxEvent] = []

    def handle(self, event: MailboxEvent) -> None:
        self.events.append(event)

    def of_type(self, event_type: type) -> list:
        return [e for e in self.events if isinstance(e, event_type)]
