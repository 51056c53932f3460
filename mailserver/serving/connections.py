"""The connections this process holds open (IMAP, SMTP sessions), described and closed on request.

James's ``ConnectionDescriptionSupplier`` and ``Disconnector``: WebAdmin lists the channels and
closes those of some users. Each server lives on an event loop thread of its own, so its sessions
are read and closed on that loop (``on_loop``), never from WebAdmin's thread.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar, runtime_checkable

T = TypeVar("T")
ON_LOOP_TIMEOUT = 5.0   # seconds; a loop that does not answer in that time is stalled anyway


@dataclass(frozen=True)
class ConnectionDescription:
    protocol: str                       # "IMAP", "SMTP"
    endpoint: str                       # James's server names: "imapserver", "smtpserver"
    remote_address: str | None
    connection_date: dt.datetime | None
    is_active: bool
    is_open: bool
    is_writable: bool
    is_encrypted: bool
    username: str | None                # the logged-in user, if any
    protocol_specific: dict[str, str] = field(default_factory=dict)


class ConnectionSource(Protocol):
    def describe_connections(self) -> list[ConnectionDescription]: ...

    def disconnect(self, usernames: frozenset[str] | None) -> None:
        """Close the sessions of these users (None: every session)."""


@runtime_checkable
class CertificateReloadable(Protocol):
    """A server whose TLS key pair can be loaded again (James's ``CertificateReloadable``)."""

    port: int | None
    tls_context: ssl.SSLContext | None

    def reload_certificate(self) -> bool:
        """False when the server has no TLS."""


class ConnectionRegistry:
    """The servers of this process; WebAdmin asks them all."""

    def __init__(self) -> None:
        self._sources: list[ConnectionSource] = []
        self._lock = threading.Lock()

    def register(self, source: ConnectionSource) -> None:
        with self._lock:
            self._sources.append(source)

    def describe(self) -> list[ConnectionDescription]:
        with self._lock:
            sources = list(self._sources)
        return [c for source in sources for c in source.describe_connections()]

    def reloadable(self) -> list[CertificateReloadable]:
        """The servers of this process that have TLS."""
        with self._lock:
            return [s for s in self._sources if isinstance(s, CertificateReloadable) and s.tls_context is not None]

    def disconnect(self, usernames: frozenset[str] | None) -> None:
        with self._lock:
            sources = list(self._sources)
        for source in sources:
            source.disconnect(usernames)


def on_loop(loop: asyncio.AbstractEventLoop | None, fn: Callable[[], T]) -> T:
    """``fn()`` run on ``loop`` (where the sessions live) and its result; directly when the caller is
    on that loop already or the server has no running loop (then it has no session either)."""
    if loop is None or not loop.is_running():
        return fn()
    try:
        if asyncio.get_running_loop() is loop:
            return fn()
    except RuntimeError:   # no loop in this thread: the usual case, WebAdmin's worker threads
        pass

    async def call() -> T:
        return fn()
    return asyncio.run_coroutine_threadsafe(call(), loop).result(ON_LOOP_TIMEOUT)
