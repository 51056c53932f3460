"""Wake IDLE sessions when their mailbox changes (RFC 2177).

Two sources, whichever comes first:

* a change made through this server (APPEND, STORE, COPY, MOVE, EXPUNGE of any session here)
  calls ``changed(mailbox_id)``: the other sessions idling on that mailbox wake at once;
* everything else (LocalDelivery, other nodes, WebAdmin) is seen by polling the mailbox's
  ``MailboxState`` (counters and the uid/modseq generators: three single-row reads) every
  ``interval`` seconds. One poll per *mailbox* being watched, however many sessions idle on it.

Why not a listener on ``MailboxContext.bus``: the event-bus port has group listeners only (on
the RabbitMQ bus, work-queue semantics: one node of the group gets each event, so the node
holding the IDLE session would miss most of them) and no way to unregister; IDLE needs James's
key listeners (per mailbox id, on every node). When the bus offers them, ``changed`` is the
place to call from a key listener and the poll can slow down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mailserver.model.ids import MailboxId

log = logging.getLogger(__name__)

Probe = Callable[[Any], Awaitable[Any]]   # (path) -> MailboxState


@dataclass
class _Watch:
    path: Any
    waiters: dict[asyncio.Future, Any] = field(default_factory=dict)   # future -> the state its session knows
    task: asyncio.Task | None = None


class MailboxWatcher:
    def __init__(self, probe: Probe, interval: float) -> None:
        self.probe = probe
        self.interval = interval
        self._watches: dict[MailboxId, _Watch] = {}
        self.polls = 0   # for tests and metrics: probe calls made

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
        try:
            await future
        finally:
            watch.waiters.pop(future, None)
            if not watch.waiters:
                if watch.task is not None:
                    watch.task.cancel()
                if self._watches.get(mailbox_id) is watch:
                    del self._watches[mailbox_id]

    async def _poll(self, mailbox_id: MailboxId, watch: _Watch) -> None:
        while watch.waiters:
            await asyncio.sleep(self.interval)
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
