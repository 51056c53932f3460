"""Connection caps: how many SMTP sessions the server, and each client address, may hold open.

Every open session costs a socket, a reader buffer and, during DATA, up to the in-memory part
of its spool (``data.py``); without a cap one client can open sessions until the process runs
out of descriptors or memory. James's ``connectionLimit`` / ``connectionLimitPerIP``:

* more than ``total`` sessions open -> ``421 4.7.0 Too many connections``;
* more than ``per_ip`` sessions from one address -> ``421 4.7.0 Too many connections from
  your address``;

both sent instead of the greeting, then the connection is closed. ``None`` lifts a cap. The
counts live on the server's event loop (one thread), so they need no lock.
"""

from __future__ import annotations

from collections import Counter

TOO_MANY_CONNECTIONS = "421 4.7.0 Too many connections, try again later"
TOO_MANY_FROM_ADDRESS = "421 4.7.0 Too many connections from your address, try again later"


class ConnectionLimits:
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

    def refusal(self, ip: str | None) -> str | None:
        """The reply refusing a session just opened (already counted), or None."""
        if self.total is not None and self._open > self.total:
            return TOO_MANY_CONNECTIONS
        if self.per_ip is not None and ip and self._by_ip[ip] > self.per_ip:
            return TOO_MANY_FROM_ADDRESS
        return None

    def count(self, ip: str | None = None) -> int:
        return self._by_ip.get(ip, 0) if ip else self._open
