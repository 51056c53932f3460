"""An asyncio protocol server on an event loop of its own, in a daemon thread.

The SMTP and IMAP servers are asyncio servers; ``mailserver serve`` and the tests run them
beside blocking code (the spooler, WebAdmin, pytest), so each gets a private loop in a thread.
Start-up failures (a port in use) are raised in the caller's thread, not lost in the loop's.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Protocol, Self


class AsyncServer(Protocol):
    port: int | None

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class AsyncServerThread:
    """Runs ``server.start()`` then the loop until ``stop()``; ``kind`` names the thread and errors."""

    kind = "server"

    def __init__(self, server: AsyncServer) -> None:
        self.server = server
        self.loop = asyncio.new_event_loop()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

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
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(timeout)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
