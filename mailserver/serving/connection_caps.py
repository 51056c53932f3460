"""Connection caps: how many sessions a server, and each client address, may hold open.

Every open session costs a socket and buffers; without a cap one client can open sessions until
the process runs out of descriptors, and a total cap alone lets that client lock everyone else
out. James's ``connectionLimit`` / ``connectionLimitPerIP``, shared by the SMTP and the IMAP
server (each words its own refusal: ``421 4.7.0`` or ``* BYE``).

A session is counted as soon as it is accepted (``opened``), then ``over`` says whether it is one
too many; ``closed`` gives its place back. ``None`` lifts a cap. The counts live on the server's
event loop (one thread), so they need no lock.
"""

from __future__ import annotations

from collections import Counter
from enum import Enum


class Over(Enum):
    TOTAL = "total"        # more sessions open than the server's cap
    ADDRESS = "address"    # more sessions from this client address than its cap


class ConnectionCaps:
    def __init__(self, total: int | None, per_ip: int | None) -> None:
        self.total = total
        self.per_ip = per_ip
        self._open = 0
        self._by_ip: Counter[str] = Counter()

    def opened(self, ip: str | None) -> None:
        self._open += 1
        if ip:
            self._by_ip[ip] += 1

    def closed(self, ip: str | None) -> None:
        self._open -= 1
        if ip:
            self._by_ip[ip] -= 1
            if self._by_ip[ip] <= 0:
                del self._by_ip[ip]

    def over(self, ip: str | None) -> Over | None:
        """Which cap a session just opened (already counted) exceeds, or None."""
        if self.total is not None and self._open > self.total:
            return Over.TOTAL
        if self.per_ip is not None and ip and self._by_ip[ip] > self.per_ip:
            return Over.ADDRESS
        return None

    def count(self, ip: str | None = None) -> int:
        return self._by_ip.get(ip, 0) if ip else self._open
