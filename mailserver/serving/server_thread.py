"""An asyncio protocol server on an event loop of its own, in a daemon thread.

The SMTP and IMAP servers are asyncio servers; ``mailserver serve`` and the tests run them
beside blocking code (the spooler, WebAdmin, pytest), so each gets a private loop in a thread.
Start-up failures (a port in use) are raised in the caller's thread, not lost in the loop's.

The loop is uvloop's (libuv, in C) unless ``event_loop="asyncio"``: under load the SMTP loop
shares one interpreter with the spooler and the listeners, and the standard library's loop spent
its turns in Python (selector, handles, transports); with uvloop a session from connection to
``250`` took 15 % less time and intake rose 10 % at 16 sessions (issue 16, docs/benchmarks.md).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Protocol, Self

import uvloop

from mailserver.observability.loop_stalls import WATCHDOG, LoopStallWatchdog
from mailserver.serving.event_loops import DEFAULT_EVENT_LOOP, EVENT_LOOP_NAMES

EVENT_LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "uvloop": uvloop.new_event_loop,
    "asyncio": asyncio.new_event_loop,
}
assert tuple(EVENT_LOOPS) == EVENT_LOOP_NAMES and DEFAULT_EVENT_LOOP in EVENT_LOOPS


class AsyncServer(Protocol):
    port: int | None

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class AsyncServerThread:
    """Runs ``server.start()`` then the loop until ``stop()``; ``kind`` names the thread and errors."""

    kind = "server"

    def __init__(self, server: AsyncServer, *, event_loop: str = DEFAULT_EVENT_LOOP,
                 watchdog: LoopStallWatchdog = WATCHDOG) -> None:
        if event_loop not in EVENT_LOOPS:
            raise ValueError(f"event loop must be one of {', '.join(EVENT_LOOPS)}; got {event_loop!r}")
        self.server = server
        self.loop = EVENT_LOOPS[event_loop]()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.watchdog = watchdog
        self._watched_as: str | None = None

    @property
    def port(self) -> int:
        assert self.server.port is not None
        return self.server.port

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self.server.start())
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._watched_as = f"{self.kind.lower()}:{self.server.port}"
        self.watchdog.watch(self._watched_as, self.loop)
        self._ready.set()
        self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.close()

    def start(self, timeout: float = 10.0) -> Self:
        self._thread = threading.Thread(target=self._run, name=f"{self.kind.lower()}-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"{self.kind} server did not start")
        if self._error is not None:
            raise RuntimeError(f"{self.kind} server failed to start: {self._error}") from self._error
        return self

    def alive(self) -> bool:
        """Whether the loop's thread still runs (the lifecycle check of ``mailserver serve``)."""
        return self._thread is not None and self._thread.is_alive()

    def stop(self, timeout: float = 10.0) -> None:
        if self._thread is None:
            return
        if self._watched_as is not None:
            self.watchdog.unwatch(self._watched_as)   # a loop that stops on purpose is no stall
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
