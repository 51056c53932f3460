"""Wake IDLE sessions when their mailbox changes (RFC 2177), for a session whose selected mailbox's
events cannot be trusted (``mailbox_feed``: the bus is down or lost events since registration):
the degraded mode, and the IMAP role's one poll. The bus's notice that key delivery is back
(``key_delivery_changed``) wakes the sessions, which read the mailbox and follow their feed again.

Three sources, whichever comes first:

* a change made through this server (APPEND, STORE, COPY, MOVE, EXPUNGE of any session here)
  calls ``changed(mailbox_id)``: the other sessions idling on that mailbox wake at once;
* a key listener on the event bus (James's ``MailboxIdRegistrationKey``), registered while a
  mailbox is watched: an event dispatched by any process (LocalDelivery, another node, WebAdmin,
  JMAP) wakes its sessions as soon as the bus delivers it;
* polling the mailbox's ``MailboxState`` (counters and the uid/modseq generators: three single-row
  reads) every ``interval`` seconds, one poll per *mailbox* however many sessions idle on it. While
  the bus delivers key events (``key_delivery_live``) a watch polls once, to see what changed
  before its key was bound, then stops; it polls again whenever the bus is down.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mailserver.events.api import EventBus, EventListener, Registration
from mailserver.events.registration_keys import mailbox_key
from mailserver.model.events import MailboxEvent
from mailserver.model.ids import MailboxId

log = logging.getLogger(__name__)

Probe = Callable[[Any], Awaitable[Any]]   # (path) -> MailboxState


@dataclass
class _Watch:
    path: Any
    waiters: dict[asyncio.Future, Any] = field(default_factory=dict)   # future -> the state its session knows
    task: asyncio.Task | None = None
    registration: Registration | None = None
    closed: bool = False
    probed_while_pushed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Wake(EventListener):
    """A key listener: called on a bus thread, it hands the wake-up to the event loop."""

    def __init__(self, watcher: MailboxWatcher, loop: asyncio.AbstractEventLoop, mailbox_id: MailboxId) -> None:
        self.watcher, self.loop, self.mailbox_id = watcher, loop, mailbox_id

    def handle(self, event: MailboxEvent) -> None:
        self.key_delivery_changed()

    def key_delivery_changed(self) -> None:
        """Also when the bus comes back: the sessions read the mailbox and follow their feed again."""
        try:
            self.loop.call_soon_threadsafe(self.watcher.changed, self.mailbox_id)
        except RuntimeError:   # the loop is closed: the server stopped
            pass


class MailboxWatcher:
    def __init__(self, probe: Probe, interval: float, bus: EventBus | None = None) -> None:
        self.probe = probe
        self.interval = interval
        self.bus = bus
        self._watches: dict[MailboxId, _Watch] = {}
        self.polls = 0   # for tests and metrics: probe calls made
        self.skipped_polls = 0   # poll ticks left out because the bus pushed the mailbox's events

    def changed(self, mailbox_id: MailboxId) -> None:
        """A change made here: wake every session waiting on that mailbox (call on the event loop)."""
        watch = self._watches.get(mailbox_id)
        if watch is None:
            return
        for future in list(watch.waiters):
            if not future.done():
                future.set_result(None)

    async def wait(self, mailbox_id: MailboxId, path: Any, known: Any) -> None:
        """Return once the mailbox's state differs from ``known`` or a local change is signalled."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future = loop.create_future()
        watch = self._watches.setdefault(mailbox_id, _Watch(path))
        watch.path = path
        watch.waiters[future] = known
        if watch.task is None or watch.task.done():
            watch.task = loop.create_task(self._poll(mailbox_id, watch))
            if self.bus is not None:
                loop.run_in_executor(None, self._subscribe, watch, _Wake(self, loop, mailbox_id), mailbox_id)
        try:
            await future
        finally:
            watch.waiters.pop(future, None)
            if not watch.waiters:
                if watch.task is not None:
                    watch.task.cancel()
                if self._watches.get(mailbox_id) is watch:
                    del self._watches[mailbox_id]
                self._unsubscribe(watch, loop)

    def _subscribe(self, watch: _Watch, listener: _Wake, mailbox_id: MailboxId) -> None:
        """On an executor thread: binding the key may wait for the broker."""
        assert self.bus is not None
        try:
            registration = self.bus.register_key(listener, mailbox_key(mailbox_id))
        except Exception as exc:  # the poll still sees every change
            log.warning("IDLE on mailbox %s falls back on polling: key registration failed (%s)", mailbox_id, exc)
            return
        with watch.lock:
            if not watch.closed:
                watch.registration = registration
                return
        registration.unregister()   # the watch ended while the key was being bound

    def _unsubscribe(self, watch: _Watch, loop: asyncio.AbstractEventLoop) -> None:
        with watch.lock:
            watch.closed = True
            registration, watch.registration = watch.registration, None
        if registration is not None:
            loop.run_in_executor(None, registration.unregister)

    def _pushed(self, watch: _Watch) -> bool:
        """Whether the bus brings this mailbox's events right now (then polling is only a first check)."""
        return watch.registration is not None and self.bus is not None and self.bus.key_delivery_live()

    async def _poll(self, mailbox_id: MailboxId, watch: _Watch) -> None:
        while watch.waiters:
            await asyncio.sleep(self.interval)
            pushed = self._pushed(watch)
            if pushed and watch.probed_while_pushed:
                self.skipped_polls += 1
                continue
            watch.probed_while_pushed = pushed
            try:
                self.polls += 1
                state = await self.probe(watch.path)
            except asyncio.CancelledError:
                raise
            except Exception as exc:   # the mailbox was deleted or a backend hiccup: wake them, they will see
                log.info("IDLE poll of mailbox %s failed: %s", mailbox_id, exc)
                state = None
            for future, known in list(watch.waiters.items()):
                if state != known and not future.done():
                    future.set_result(None)

    async def close(self) -> None:
        for watch in list(self._watches.values()):
            if watch.task is not None:
                watch.task.cancel()
            for future in watch.waiters:
                if not future.done():
                    future.cancel()
        self._watches.clear()
