"""A uvicorn server in a daemon thread of the test process, from its start to the end of a ``with`` block."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn


@contextmanager
def running(server: uvicorn.Server, *, sockets: list[socket.socket] | None = None,
            timeout: float = 10.0) -> Iterator[None]:
    """Enters once the server has started (fails if it dies or does not start within ``timeout`` seconds);
    on leaving, asks it to exit and waits for its thread."""
    thread = threading.Thread(target=server.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        yield
    finally:
        server.should_exit = True
        thread.join(timeout=10)
