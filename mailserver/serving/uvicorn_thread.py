"""A uvicorn server (WebAdmin, JMAP) on a daemon thread of its own, with a role's lifecycle."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import uvicorn

STOP_TIMEOUT = 10.0


class UvicornThread:
    """``start`` returns once the server listens (or raises if its thread died first); ``stop`` asks it
    to finish its requests and waits for it a bounded time."""

    def __init__(self, server: uvicorn.Server, name: str) -> None:
        self.server = server
        self.name = name
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port it listens on once started (the kernel's pick when configured with 0)."""
        for listening in getattr(self.server, "servers", []):
            for sock in listening.sockets:
                return int(sock.getsockname()[1])
        return int(self.server.config.port)

    def start(self) -> None:
        self._thread = threading.Thread(target=self.server.run, name=self.name, daemon=True)
        self._thread.start()
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"{self.name} failed to start (see the log above)")
            self._thread.join(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=STOP_TIMEOUT)

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self.server.should_exit
