"""This process's push connections, fed by the user's ``AccountIdRegistrationKey`` on the push bus.

One key listener per user with an open connection, registered with the first connection and
unregistered when the last one closes. The bus calls it on its own threads; each connection
keeps at most ``queue_size`` state changes (the oldest is dropped: a later StateChange carries
newer states, so a slow client loses nothing it needs) and is woken on its event loop. A user
opens at most ``max_connections_per_user`` connections in this process, and all users together
at most ``max_connections``, so many accounts cannot pile up open streams either. Registering and
unregistering hold the hub's lock, so that a key is never left bound without a connection.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from mailserver.events.api import EventBus, EventListener, Registration
from mailserver.events.registration_keys import account_key
from mailserver.jmap.account import account_id
from mailserver.model.address import Username
from mailserver.model.events import MailboxEvent
from mailserver.model.state_change import TYPE_NAMES, StateChangeEvent


class TooManyConnections(Exception):
    """The user already holds ``max_connections_per_user`` push connections here, or all users
    together ``max_connections``."""


@dataclass(frozen=True)
class PushLimits:
    max_connections_per_user: int = 10
    max_connections: int = 1000   # all users together, in this process
    queue_size: int = 32          # state changes kept for a connection that does not read
    min_ping_seconds: int = 5     # EventSource ``ping`` is raised to this...
    max_ping_seconds: int = 300   # ...and lowered to this (RFC 8620 7.3: the server may clamp it)
    websocket_ping_seconds: float | None = 60.0   # None: no WebSocket ping frame

    def clamp_ping(self, seconds: int) -> int:
        return 0 if seconds == 0 else max(self.min_ping_seconds, min(self.max_ping_seconds, seconds))


def state_change(event: StateChangeEvent, types: Collection[str]) -> dict[str, Any] | None:
    """RFC 8620 7.1 ``StateChange`` of the types asked, or None when none of them changed."""
    states = {name: state for name, state in event.type_states.items() if name in types}
    if not states:
        return None
    return {"@type": "StateChange", "changed": {account_id(event.user): states}}


class PushStream:
    """One connection's state changes: filled from bus threads, read on the connection's loop."""

    def __init__(self, user: Username, types: Collection[str], size: int, loop: asyncio.AbstractEventLoop) -> None:
        self.user = user
        self.types: frozenset[str] = frozenset(types)
        self._pending: deque[dict[str, Any]] = deque(maxlen=size)
        self._lock = threading.Lock()
        self._loop = loop
        self._ready = asyncio.Event()

    def offer(self, event: StateChangeEvent) -> None:
        change = state_change(event, self.types)
        if change is None:
            return
        with self._lock:
            self._pending.append(change)   # full: the oldest goes
        try:
            self._loop.call_soon_threadsafe(self._ready.set)
        except RuntimeError:   # the connection's loop is closed: it is going away
            pass

    async def next(self, timeout: float | None) -> dict[str, Any] | None:
        """The next StateChange, or None when ``timeout`` seconds passed without one."""
        while True:
            with self._lock:
                if self._pending:
                    return self._pending.popleft()
                self._ready.clear()
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return None


class _UserListener(EventListener):
    group = "JmapPushConnections"   # a key listener: the group is not used

    def __init__(self) -> None:
        self.streams: list[PushStream] = []
        self.registration: Registration | None = None

    def accepts(self, event: MailboxEvent) -> bool:
        return isinstance(event, StateChangeEvent)

    def handle(self, event: MailboxEvent) -> None:
        if isinstance(event, StateChangeEvent):
            for stream in list(self.streams):
                stream.offer(event)


class PushHub:
    def __init__(self, bus: EventBus, limits: PushLimits | None = None) -> None:
        self.bus = bus
        self.limits = limits or PushLimits()
        self._lock = threading.Lock()
        self._users: dict[Username, _UserListener] = {}
        self._open = 0   # streams of all users

    @asynccontextmanager
    async def connect(self, user: Username, types: Collection[str] = TYPE_NAMES) -> AsyncIterator[PushStream]:
        """A stream of the user's state changes while the block runs. Raises ``TooManyConnections``."""
        stream = PushStream(user, types, self.limits.queue_size, asyncio.get_running_loop())
        # Off the event loop: binding the key waits on the broker.
        await asyncio.to_thread(self._add, stream)
        try:
            yield stream
        finally:
            await asyncio.shield(asyncio.to_thread(self._remove, stream))

    def open_connections(self, user: Username) -> int:
        with self._lock:
            listener = self._users.get(user)
            return len(listener.streams) if listener is not None else 0

    def refusal(self, user: Username) -> str | None:
        """Why a new connection of ``user`` would be refused now, None when it would not."""
        with self._lock:
            return self._refusal(user)

    def _refusal(self, user: Username) -> str | None:
        listener = self._users.get(user)
        if listener is not None and len(listener.streams) >= self.limits.max_connections_per_user:
            return f"{user} holds {len(listener.streams)} push connections"
        if self._open >= self.limits.max_connections:
            return f"this server holds {self._open} push connections"
        return None

    def _add(self, stream: PushStream) -> None:
        with self._lock:
            refused = self._refusal(stream.user)
            if refused is not None:
                raise TooManyConnections(refused)
            listener = self._users.get(stream.user)
            if listener is None:
                listener = _UserListener()
                listener.registration = self.bus.register_key(listener, account_key(stream.user))
                self._users[stream.user] = listener
            listener.streams.append(stream)
            self._open += 1

    def _remove(self, stream: PushStream) -> None:
        with self._lock:
            listener = self._users.get(stream.user)
            if listener is None or stream not in listener.streams:
                return
            listener.streams.remove(stream)
            self._open -= 1
            if listener.streams:
                return
            del self._users[stream.user]
            if listener.registration is not None:
                listener.registration.unregister()
