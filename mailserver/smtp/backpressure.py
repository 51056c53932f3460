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
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from enum import StrEnum

from mailserver.queue.api import MailQueue

log = logging.getLogger(__name__)

SERVICE_UNAVAILABLE = "421 4.3.2 Service not available, closing transmission channel"
MAINTENANCE = "421 4.3.2 Service temporarily unavailable for maintenance, closing transmission channel"
SPOOL_FULL = "452 4.3.1 Insufficient system storage, try again later"


class Stage(StrEnum):
    CONNECT = "connect"
    MAIL = "mail"


class Condition(ABC):
    stage: Stage = Stage.CONNECT

    @abstractmethod
    def refusal(self) -> str | None:
        """The SMTP reply refusing work now, or None when this condition lets it through."""


class MaintenanceCondition(Condition):
    stage = Stage.CONNECT

    def __init__(self, in_maintenance: Callable[[], bool]) -> None:
        self.in_maintenance = in_maintenance

    def refusal(self) -> str | None:
        return MAINTENANCE if self.in_maintenance() else None


class HealthCondition(Condition):
    """``healthy()`` returning False (or raising) refuses sessions: the spool cannot be written."""

    stage = Stage.CONNECT

    def __init__(self, healthy: Callable[[], bool], *, name: str = "backend") -> None:
        self.healthy = healthy
        self.name = name

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
            if self._cached is not None and now - self._cached[0] < self.cache_seconds:
                return self._cached[1]
            size = self.spool.size()
            self._cached = (now, size)
            return size

    def refusal(self) -> str | None:
        try:
            size = self.current_size()
        except Exception:
            log.warning("cannot read the spool size; refusing mail", exc_info=True)
            return SPOOL_FULL
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
        stages = {Stage.CONNECT} if stage == Stage.CONNECT else {Stage.CONNECT, Stage.MAIL}
        for condition in self.conditions:
            if condition.stage in stages:
                reply = condition.refusal()
                if reply is not None:
                    return reply
        return None
