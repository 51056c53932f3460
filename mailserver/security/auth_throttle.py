"""Authentication throttling shared by IMAP (LOGIN, AUTHENTICATE), SMTP AUTH and WebAdmin.

Failures are counted in a sliding window (``window``) under three keys: the client address
(IPv6 by ``ipv6_prefix`` network), the account, and the account at that address. Before the
credentials are checked, an attempt is:

* **refused** when its address has ``address_limit`` failures in the window, or its account at
  that address ``account_address_limit`` (the protocol answers ``NO [UNAVAILABLE]``, ``454
  4.7.0`` or 429 with ``Retry-After``, counts the refusal and logs a WARNING with the account and
  the address). The refusal ends by itself once enough failures have left the window;
* otherwise **delayed**: after ``free_failures`` failures of its address the delay doubles from
  ``delay`` up to ``max_delay`` per further failure; failures on its account delay attempts
  from *any* address the same way but never beyond ``account_max_delay``.

Failures on an account never refuse it: a client hammering an account from one address (or a
few) ends refused, while the owner logging in from another address waits at most
``account_max_delay`` and gets in. A success clears the failures of that account at that
address only (a client with an account of its own cannot reset its address's count by logging
into it between guesses). Attempts under way count as failures until they end, so forty
parallel connections are refused as forty sequential guesses would be.

The delay comes before the check, whatever the password: a reply that came quickly only when
the password was right would let a client give up waiting and guess on.

One throttle per process (an in-memory ``FailureLog``): ``mailserver serve`` builds it once and
hands it to its protocols, so a client moving from IMAP to SMTP keeps its count. With several
processes each counts on its own (the limits apply per process, as the connection caps do).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from mailserver.observability.metrics import Metrics
from mailserver.security.failure_log import FailureLog, MemoryFailureLog
from mailserver.security.throttle_config import AuthThrottleConfig

log = logging.getLogger(__name__)

MAX_ACCOUNT_LENGTH = 320   # an address is at most 254 octets; longer input is cut, not stored whole
_MAX_DOUBLINGS = 30


@dataclass
class Attempt:
    """One authentication attempt: refused (``retry_after`` seconds), or to be reported by
    ``failed()`` or ``succeeded()`` once the credentials are checked."""

    throttle: AuthThrottle
    protocol: str
    account: str | None
    address: str | None
    keys: tuple[str, ...] = ()   # the counters a failure adds to
    pair: str | None = None      # the account at the address: what a success clears
    refused: bool = False
    retry_after: int = 0
    delay: float = 0.0

    @property
    def refusal(self) -> str:
        """The human part of a refusal reply."""
        unit = "second" if self.retry_after == 1 else "seconds"
        return f"Too many authentication failures, try again in {self.retry_after} {unit}"

    def failed(self) -> None:
        self.throttle._failed(self)

    def succeeded(self) -> None:
        self.throttle._succeeded(self)


class AuthThrottle:
    def __init__(self, config: AuthThrottleConfig | None = None, *, metrics: Metrics | None = None,
                 failures: FailureLog | None = None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.config = config = config or AuthThrottleConfig()
        self.metrics = metrics
        keep = max(config.address_limit, config.account_address_limit,
                   config.free_failures + _doublings(config.delay, config.max_delay) + 1)
        self.failures = failures or MemoryFailureLog(keep=keep, max_keys=config.max_tracked)
        self.clock = clock
        self.sleep = sleep
        self._pending: Counter[str] = Counter()
        self._warned_until: dict[str, float] = {}
        self._lock = threading.Lock()

    @classmethod
    def off(cls) -> AuthThrottle:
        """Nothing delayed nor refused (a server built without a throttle)."""
        return cls(AuthThrottleConfig(enabled=False))

    # -- the call sites ----------------------------------------------------------------------------
    @asynccontextmanager
    async def attempt(self, protocol: str, account: str | None, address: str | None) -> AsyncIterator[Attempt]:
        """Wait the attempt's delay, then give it to the caller: refused, or to report.

        An attempt left without a report (the users repository failed) counts for nothing.
        """
        attempt = self._admit(protocol, account, address)
        try:
            if attempt.delay > 0:
                self._count("authenticationDelays", protocol)
                log.debug("%s authentication for %s from %s delayed %.1f s", protocol, account, address,
                          attempt.delay)
                await self.sleep(attempt.delay)
            yield attempt
        finally:
            self._release(attempt)

    # -- decisions ---------------------------------------------------------------------------------
    def _admit(self, protocol: str, account: str | None, address: str | None) -> Attempt:
        c = self.config
        if not c.enabled:
            return Attempt(self, protocol, account, address)
        account_key = _account_key(account)
        address_key = self._address_key(address)
        # Each kind of key has its own prefix, and an address has no space: no account name the client
        # chooses can be taken for another key (and count against someone else's account at an address).
        pair_key = f"pair:{address_key} {account_key}" if account_key and address_key else None
        keys = tuple(k for k in (address_key, account_key, pair_key) if k)
        with self._lock:
            now = self.clock()
            since = now - c.window
            seen = {k: self.failures.recent(k, since) for k in keys}
            counts = {k: len(seen[k]) + self._pending[k] for k in keys}
            for key, limit in ((address_key, c.address_limit), (pair_key, c.account_address_limit)):
                if key and counts[key] >= limit:
                    retry = self._retry_after(seen[key], limit, now)
                    attempt = Attempt(self, protocol, account, address, refused=True, retry_after=retry)
                    self._refused(attempt, key, counts[key], now)
                    return attempt
            delay = max(self._delay(counts[address_key], c.max_delay) if address_key else 0.0,
                        self._delay(counts[account_key], c.account_max_delay) if account_key else 0.0)
            self._pending.update(keys)
        return Attempt(self, protocol, account, address, keys=keys, pair=pair_key, delay=delay)

    def _delay(self, failures: int, cap: float) -> float:
        c = self.config
        if failures < c.free_failures:
            return 0.0
        return min(cap, c.delay * 2 ** min(failures - c.free_failures, _MAX_DOUBLINGS))

    def _retry_after(self, times: list[float], limit: int, now: float) -> int:
        if len(times) >= limit:   # until the failure that makes the count reach the limit leaves the window
            seconds = times[len(times) - limit] + self.config.window - now
        else:   # the limit is reached with attempts under way: they end within the longest delay
            seconds = self.config.max_delay
        return max(1, math.ceil(seconds))

    def _address_key(self, address: str | None) -> str | None:
        if not address:
            return None
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return "ip:" + address[:MAX_ACCOUNT_LENGTH]
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if any(ip.version == net.version and ip in net for net in self.config.exempt_networks):
            return None
        if isinstance(ip, ipaddress.IPv6Address):
            return "ip:" + str(ipaddress.ip_network(f"{ip}/{self.config.ipv6_prefix}", strict=False))
        return f"ip:{ip}"

    # -- outcomes ----------------------------------------------------------------------------------
    def _failed(self, attempt: Attempt) -> None:
        self._count("authenticationFailures", attempt.protocol)
        if attempt.keys:
            self.failures.add(attempt.keys, self.clock())

    def _succeeded(self, attempt: Attempt) -> None:
        if attempt.pair is not None:
            self.failures.forget(attempt.pair)

    def _release(self, attempt: Attempt) -> None:
        if not attempt.keys:
            return
        with self._lock:
            self._pending.subtract(attempt.keys)
            for key in attempt.keys:
                if self._pending[key] <= 0:
                    del self._pending[key]

    def _refused(self, attempt: Attempt, key: str, count: int, now: float) -> None:
        """Counted every time; logged once per key and refusal period (a refused client retrying
        in a loop would otherwise flood the log)."""
        self._count("authenticationRefusals", attempt.protocol)
        if self._warned_until.get(key, 0.0) > now:
            log.debug("%s authentication refused for %s from %s", attempt.protocol, attempt.account, attempt.address)
            return
        if len(self._warned_until) >= self.config.max_tracked:
            self._warned_until = {k: t for k, t in self._warned_until.items() if t > now}
        self._warned_until[key] = now + attempt.retry_after
        scope = "the address" if key.startswith("ip:") else "the account from the address"
        log.warning("%s authentication refused for account %s from address %s: %d failures of %s in %d s; "
                    "refused for %d s", attempt.protocol, attempt.account, attempt.address, count, scope,
                    round(self.config.window), attempt.retry_after)

    def _count(self, meter: str, protocol: str) -> None:
        if self.metrics is not None:
            self.metrics.meter(f"{meter}:{protocol}", f"{meter} of {protocol} authentication").inc()


def _account_key(account: str | None) -> str | None:
    name = (account or "").strip().lower()[:MAX_ACCOUNT_LENGTH]
    return f"user:{name}" if name else None


def _doublings(delay: float, cap: float) -> int:
    """How many doublings take ``delay`` to ``cap`` (counts beyond them change nothing)."""
    if delay <= 0 or cap <= delay:
        return 0
    return min(_MAX_DOUBLINGS, math.ceil(math.log2(cap / delay)))
