"""Backend health probed in the background, read without blocking by SMTP's back-pressure.

SMTP asks "may I accept mail?" for every new session; running real probes there would put a
Cassandra query, an AMQP handshake and an S3 request in front of each greeting. A thread probes
every ``interval`` seconds instead, and a result older than ``3 * interval + timeout`` counts as
unhealthy (the prober itself is stuck; a round may legitimately take up to ``timeout``, e.g. a slow
first query after a backend restarts on a loaded host, and must not refuse mail by being slow).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from mailserver.observability.health import HealthCheck, HealthCheckRunner, Result, Status
from mailserver.observability.metrics import Metrics

log = logging.getLogger(__name__)


class HealthMonitor:
    def __init__(self, checks: Sequence[HealthCheck], *, interval: float = 2.0, timeout: float = 5.0,
                 metrics: Metrics | None = None) -> None:
        self.runner = HealthCheckRunner(checks, timeout=timeout)
        self.interval = interval
        self.max_age = 3 * interval + timeout
        self.metrics = metrics
        self._lock = threading.Lock()
        self._results: list[Result] = []
        self._at = float("-inf")
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def probe(self) -> list[Result]:
        results = self.runner.run()
        unhealthy = [r for r in results if r.status is Status.UNHEALTHY]
        with self._lock:
            was_healthy = self._healthy_locked()
            self._results, self._at = results, time.monotonic()
        if unhealthy and was_healthy:
            log.warning("backend unhealthy, refusing new mail: %s",
                        "; ".join(f"{r.component}: {r.cause}" for r in unhealthy))
        elif not unhealthy and not was_healthy:
            log.info("backends healthy again, accepting mail")
        if self.metrics is not None:
            for result in results:
                self.metrics.health.labels(result.component).set(result.status.severity)
        return results

    def healthy(self) -> bool:
        with self._lock:
            return self._healthy_locked()

    def _healthy_locked(self) -> bool:
        fresh = time.monotonic() - self._at <= self.max_age
        return fresh and all(r.status is not Status.UNHEALTHY for r in self._results)

    def start(self) -> HealthMonitor:
        self.probe()  # the first answer is known before any role starts
        self._thread = threading.Thread(target=self._run, name="health-monitor", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.probe()
            except Exception:  # the runner already turns check failures into results
                log.exception("health probing failed")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.runner.close()
