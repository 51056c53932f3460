"""Health checks with James's component names, statuses and aggregation (runtime reference §7).

Each check answers ``Result(component, status, cause)``; ``HealthCheckRunner`` runs them
concurrently, each under a deadline, so one dead backend (a black-holed TCP connect, a hung
broker) turns into an ``unhealthy`` result instead of hanging ``GET /healthcheck``. Checks
also configure their own client timeouts below the deadline: the deadline is the backstop.
"""

from __future__ import annotations

import enum
import logging
import threading
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 5.0


class Status(enum.Enum):
    HEALTHY = "healthy"
    DEGRADED = "degraded"
    UNHEALTHY = "unhealthy"

    @property
    def severity(self) -> int:
        return {"healthy": 0, "degraded": 1, "unhealthy": 2}[self.value]


def worst(statuses: Iterable[Status]) -> Status:
    """James's aggregation: unhealthy > degraded > healthy; no checks at all is healthy."""
    return max(statuses, key=lambda s: s.severity, default=Status.HEALTHY)


def escape(name: str) -> str:
    # James URL-encodes with spaces as %20 ("Cassandra%20backend"), not "+".
    return urllib.parse.quote(name, safe="")


@dataclass(frozen=True)
class Result:
    component: str
    status: Status
    cause: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"componentName": self.component, "escapedComponentName": escape(self.component),
                "status": self.status.value, "cause": self.cause}


class HealthCheck(ABC):
    name: str

    @abstractmethod
    def check(self) -> Result: ...

    def close(self) -> None:
        """Release what the check keeps between probes (a connection); nothing by default."""
        return None

    def healthy(self) -> Result:
        return Result(self.name, Status.HEALTHY)

    def degraded(self, cause: str) -> Result:
        return Result(self.name, Status.DEGRADED, cause)

    def unhealthy(self, cause: str) -> Result:
        return Result(self.name, Status.UNHEALTHY, cause)


class FunctionCheck(HealthCheck):
    """A check from a callable returning None (healthy) or raising (unhealthy); for tests and glue."""

    def __init__(self, name: str, probe: Callable[[], None]) -> None:
        self.name = name
        self._probe = probe

    def check(self) -> Result:
        self._probe()
        return self.healthy()


class HealthCheckRunner:
    """Runs the registered checks; also the registry ``/healthcheck`` reads its names from.

    Component names are unique (``/healthcheck/checks/{name}`` selects on them). Checks are
    given at construction, or added later with ``register`` (a component that starts after
    WebAdmin, such as an event bus); the routes see a check as soon as it is registered.
    """

    def __init__(self, checks: Sequence[HealthCheck], *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.checks: list[HealthCheck] = []
        self.timeout = timeout
        self._lock = threading.Lock()
        for check in checks:
            self._add(check)
        # Long-lived pool, never shut down with wait=True: a hung probe must not block a request.
        self._capacity = _capacity(len(self.checks))
        self._pool = ThreadPoolExecutor(max_workers=self._capacity, thread_name_prefix="healthcheck")

    def register(self, check: HealthCheck) -> None:
        """Add a check after construction; a name already registered is refused (ValueError)."""
        with self._lock:
            self._add(check)
            if _capacity(len(self.checks)) > self._capacity:
                # Room for every check to hang once more: a bigger pool; the old one lets its probes finish.
                old, self._capacity = self._pool, _capacity(len(self.checks))
                self._pool = ThreadPoolExecutor(max_workers=self._capacity, thread_name_prefix="healthcheck")
                old.shutdown(wait=False)

    def _add(self, check: HealthCheck) -> None:
        if self.find(check.name) is not None:
            raise ValueError(f"a health check named {check.name!r} is already registered")
        self.checks = [*self.checks, check]   # copy on write: readers iterate without the lock

    def names(self) -> list[str]:
        return [c.name for c in self.checks]

    def find(self, name: str) -> HealthCheck | None:
        return next((c for c in self.checks if c.name == name), None)

    def run(self, checks: Sequence[HealthCheck] | None = None) -> list[Result]:
        selected = self.checks if checks is None else list(checks)
        pool = self._pool
        futures = [(c, pool.submit(_safe_check, c)) for c in selected]
        results = []
        for check, future in futures:
            try:
                results.append(future.result(timeout=self.timeout))
            except FutureTimeout:
                log.warning("health check %s timed out after %ss", check.name, self.timeout)
                results.append(check.unhealthy(f"timed out after {self.timeout:g}s"))
        return results

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            checks = list(self.checks)
        for check in checks:
            try:
                check.close()
            except Exception:   # closing is best effort: the process is stopping
                log.debug("closing health check %s failed", check.name, exc_info=True)


def _capacity(checks: int) -> int:
    return max(4, 2 * checks)


def _safe_check(check: HealthCheck) -> Result:
    try:
        return check.check()
    except Exception as exc:
        # Logged server side with the stack; the body only carries the cause (as James).
        log.warning("health check %s failed", check.name, exc_info=True)
        return check.unhealthy(f"{type(exc).__name__}: {exc}")
