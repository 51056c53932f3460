"""The events of the selected mailbox, as the event bus pushes them (James's ``SelectedMailboxImpl``
listener on the ``MailboxIdRegistrationKey``).

A session registers a ``MailboxFeed`` on its selected mailbox's key when it selects it, before it
reads the mailbox; the bus calls ``handle`` on its own threads (at dispatch for a change made in
this process, from the broker for one made elsewhere) and the session ``drain``s the events at the
points where it reports changes. The session can rely on the events instead of reading the
mailbox only while the bus's key delivery stays in the stretch it was in at registration
(``EventBus.key_delivery_epoch``): after a reconnection, or while the bus is down, events may
have been lost, and the session reads the mailbox again (``trusted`` says which). The bus tells
its key listeners when that happens (``key_delivery_changed``): an idling session wakes then, with
no timer of its own.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from mailserver.events.api import EventBus, EventListener, Registration
from mailserver.events.registration_keys import mailbox_key
from mailserver.model.events import MailboxDeletion, MailboxEvent
from mailserver.model.ids import MailboxId

log = logging.getLogger(__name__)


class MailboxFeed(EventListener):
    def __init__(self, bus: EventBus, mailbox_id: MailboxId, loop: asyncio.AbstractEventLoop) -> None:
        self.bus = bus
        self.mailbox_id = mailbox_id
        self.loop = loop
        self.epoch: int | None = None
        self.registration: Registration | None = None
        self._events: list[MailboxEvent] = []
        self._lock = threading.Lock()
        self.arrived = asyncio.Event()   # set on the event loop when an event comes (IDLE waits on it)

    def start(self) -> None:
        """Blocking (binding the key may wait for the broker): register for the mailbox's events.

        The epoch is read first: a reconnection while the key is being bound then shows as a change."""
        self.epoch = self.bus.key_delivery_epoch()
        try:
            self.registration = self.bus.register_key(self, mailbox_key(self.mailbox_id))
        except Exception as exc:   # the session reads the mailbox on each command instead
            log.warning("selected mailbox %s is read on each command: key registration failed (%s)",
                        self.mailbox_id, exc)
            self.epoch = None

    def stop(self) -> None:
        """Blocking: unregister (once)."""
        registration, self.registration = self.registration, None
        if registration is not None:
            registration.unregister()

    @property
    def trusted(self) -> bool:
        """Whether the events received are all the mailbox's changes since registration."""
        return self.registration is not None and self.epoch is not None and \
            self.bus.key_delivery_epoch() == self.epoch

    def resynced(self) -> None:
        """Call before reading the mailbox again: what came before is in that read; from the bus's
        current stretch on, events count again."""
        self.epoch = self.bus.key_delivery_epoch() if self.registration is not None else None
        self.drain()

    def handle(self, event: MailboxEvent) -> None:
        with self._lock:
            self._events.append(event)
        self._wake()

    def key_delivery_changed(self) -> None:
        """The bus may have lost events (``trusted`` is False now): IDLE wakes to read the mailbox."""
        self._wake()

    def _wake(self) -> None:
        try:
            self.loop.call_soon_threadsafe(self.arrived.set)
        except RuntimeError:   # the loop is closed: the server stopped
            pass

    def deletion_pending(self) -> bool:
        """Whether an event not drained yet says the mailbox was deleted."""
        with self._lock:
            return any(isinstance(event, MailboxDeletion) for event in self._events)

    def drain(self) -> list[MailboxEvent]:
        with self._lock:
            events, self._events = self._events, []
        self.arrived.clear()
        return events
