"""Back-pressure: refuse new work with a temporary reply while the server cannot take it.

Conditions are pluggable; each belongs to a stage:

* ``CONNECT`` (checked on connection, HELO/EHLO and again at MAIL): maintenance mode, an
  unhealthy backend -> ``421 4.3.2`` and the connection is closed (too many sessions is a
  policy refusal, ``421 4.7.0``: ``limits.py``);
* ``MAIL`` (checked at MAIL FROM): the spool queue over its size limit -> ``452 4.3.1``; the
  session stays open so the client can retry later.

Every refusal is temporary (4xx): a well-behaved client keeps the mail and retries, and the
server accepts again as soon as the condition clears. Checks may block (``queue.size()`` reads
Cassandra), so callers run them off the event loop; the spool size is cached for
``cache_seconds`` so a burst of connections costs one count.

``refusal_at_once`` gives the same answer when every condition knows it without blocking (a
cached spool size, a cached maintenance state, an in-memory health verdict): the SMTP server
then answers on the event loop instead of handing each of the three checks of a session to a
thread and back (issue 16), and only goes to a thread when a cache must be refreshed.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import Enum, StrEnum
from typing import Final, Literal

from mailserver.queue.api import MailQueue

log = logging.getLogger(__name__)

SERVICE_UNAVAILABLE = "421 4.3.2 Service not available, closing transmission channel"
MAINTENANCE = "421 4.3.2 Service temporarily unavailable for maintenance, closing transmission channel"
SPOOL_FULL = "452 4.3.1 Insufficient system storage, try again later"


class Stage(StrEnum):
    CONNECT = "connect"
    MAIL = "mail"


class _Unknown(Enum):
    UNKNOWN = "unknown"


UNKNOWN: Final = _Unknown.UNKNOWN
Answer = str | None | Literal[_Unknown.UNKNOWN]


class Condition(ABC):
    stage: Stage = Stage.CONNECT

    @abstractmethod
    def refusal(self) -> str | None:
        """The SMTP reply refusing work now, or None when this condition lets it through."""

    def refusal_at_once(self) -> Answer:
        """``refusal()``'s answer when it is known without blocking, else ``UNKNOWN``."""
        return UNKNOWN


class MaintenanceCondition(Condition):
    """``known()``, when given, is the same verdict without blocking (None when it would have to read)."""

    stage = Stage.CONNECT

    def __init__(self, in_maintenance: Callable[[], bool], *, known: Callable[[], bool | None] | None = None) -> None:
        self.in_maintenance = in_maintenance
        self.known = known

    def refusal(self) -> str | None:
        return MAINTENANCE if self.in_maintenance() else None

    def refusal_at_once(self) -> Answer:
        verdict = self.known() if self.known is not None else None
        if verdict is None:
            return UNKNOWN
        return MAINTENANCE if verdict else None


class HealthCondition(Condition):
    """``healthy()`` returning False (or raising) refuses sessions: the spool cannot be written.

    ``in_memory``: ``healthy()`` never blocks (a monitor's last verdict), so it is asked at once."""

    stage = Stage.CONNECT

    def __init__(self, healthy: Callable[[], bool], *, name: str = "backend", in_memory: bool = False) -> None:
        self.healthy = healthy
        self.name = name
        self.in_memory = in_memory

    def refusal_at_once(self) -> Answer:
        return self.refusal() if self.in_memory else UNKNOWN

    def refusal(self) -> str | None:
        try:
            ok = self.healthy()
        except Exception:
            log.warning("health check %s failed", self.name, exc_info=True)
            ok = False
        return None if ok else SERVICE_UNAVAILABLE


class SpoolSizeCondition(Condition):
    stage = Stage.MAIL

    def __init__(self, spool: MailQueue, limit: int, *, cache_seconds: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.spool = spool
        self.limit = limit
        self.cache_seconds = cache_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._cached: tuple[float, int] | None = None

    def current_size(self) -> int:
        now = self.clock()
        with self._lock:
            size = self._fresh(now)
            if size is None:
                size = self.spool.size()
                self._cached = (now, size)
            return size

    def _fresh(self, now: float) -> int | None:
        """The cached size while it is younger than ``cache_seconds`` (call with the lock held)."""
        if self._cached is not None and now - self._cached[0] < self.cache_seconds:
            return self._cached[1]
        return None

    def refusal(self) -> str | None:
        try:
            size = self.current_size()
        except Exception:
            log.warning("cannot read the spool size; refusing mail", exc_info=True)
            return SPOOL_FULL
        return self._verdict(size)

    def refusal_at_once(self) -> Answer:
        with self._lock:
            size = self._fresh(self.clock())
        return UNKNOWN if size is None else self._verdict(size)

    def _verdict(self, size: int) -> str | None:
        if size >= self.limit:
            log.info("spool holds %d mails (limit %d): refusing new mail", size, self.limit)
            return SPOOL_FULL
        return None


class BackPressure:
    def __init__(self, conditions: Iterable[Condition] = ()) -> None:
        self.conditions = list(conditions)

    def add(self, condition: Condition) -> BackPressure:
        self.conditions.append(condition)
        return self

    def refusal(self, stage: Stage) -> str | None:
        """First refusal among the conditions of ``stage`` (MAIL also re-checks CONNECT ones)."""
        for condition in self._of(stage):
            reply = condition.refusal()
            if reply is not None:
                return reply
        return None

    def refusal_at_once(self, stage: Stage) -> Answer:
        """``refusal(stage)`` when every condition asked knows its answer without blocking, else ``UNKNOWN``."""
        for condition in self._of(stage):
            reply = condition.refusal_at_once()
            if reply is not None:
                return reply   # a refusal, or UNKNOWN
        return None

    def _of(self, stage: Stage) -> list[Condition]:
        stages = {Stage.CONNECT} if stage == Stage.CONNECT else {Stage.CONNECT, Stage.MAIL}
        return [condition for condition in self.conditions if condition.stage in stages]
