"""Ports for servers that tests start, chosen so that nothing can take them before the server binds.

Asking the kernel for a free port (bind to 0, read the port, close) and binding it later is a race:
the port comes from the ephemeral range, and any outgoing connection of the suite (a Cassandra,
RabbitMQ or S3 client) can be given the same port in between. The ports handed out here lie below
the kernel's ephemeral range (``net.ipv4.ip_local_port_range``), where the kernel never picks a
source port, and are checked free when handed out. Each pytest process starts at its own offset and
never hands out a port twice, so two suites on one machine do not take each other's ports either.
"""

from __future__ import annotations

import os
import socket
import threading
from dataclasses import fields
from pathlib import Path

from include.stack.settings import Ports

# Below this, well-known services (and the stack's own ports) are common.
RANGE_START = 20000
_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_lock = threading.Lock()
_handed_out: set[int] = set()
_cursor: int | None = None


def ephemeral_range_start() -> int:
    """The first port the kernel may use as a source port (32768 when it cannot be read)."""
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _stack_ports() -> set[int]:
    ports = Ports()
    return {getattr(ports, f.name) for f in fields(ports)}


def bindable(port: int, host: str) -> bool:
    # No SO_REUSEADDR: a port still in TIME_WAIT is skipped, so a server that binds without the
    # option cannot fail on it either.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def unused_port(host: str = "127.0.0.1") -> int:
    """A port outside the kernel's ephemeral range that nothing listens on and no test was given."""
    global _cursor
    end = ephemeral_range_start()
    start = RANGE_START if end > RANGE_START + 1000 else 1024
    span = end - start
    reserved = _stack_ports()
    with _lock:
        if _cursor is None:
            _cursor = (os.getpid() * 97) % span
        for _ in range(span):
            port = start + _cursor
            _cursor = (_cursor + 1) % span
            if port in _handed_out or port in reserved:
                continue
            if bindable(port, host):
                _handed_out.add(port)
                return port
    raise RuntimeError(f"no free port between {start} and {end}")
