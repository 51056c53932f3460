"""Prometheus metrics: one registry per server process, James-style names where they exist.

Why a registry object rather than prometheus-client's global one: tests build several apps in
one process, and a global registry refuses to register the same metric twice.

Names: James exposes Dropwizard metrics through a Prometheus exporter; the parts of James that
exist here today are the WebAdmin itself (per-route timers) and the process. Components that
come later (SMTP, spooler, blob store) get their James names (``spoolProcessing``,
``blobStore:saveBytes`` ...) through ``Metrics.timer`` — colons are legal in Prometheus names.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)

# Seconds; from sub-millisecond routes up to slow admin scans.
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class SwitchState(Protocol):
    """What the maintenance gauges read of a state (``maintenance.api.MaintenanceState`` has it).

    A protocol rather than an import: observability is a lower layer than ``maintenance``.
    """

    @property
    def enabled(self) -> bool: ...

    @property
    def since(self) -> datetime | None: ...


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)
        self.requests = Histogram(
            "webadmin_request_duration_seconds", "WebAdmin request duration by route template",
            ["method", "route", "status"], buckets=BUCKETS, registry=self.registry)
        self.maintenance = Gauge("maintenance_mode_enabled", "1 while the cluster is in maintenance mode",
                                 registry=self.registry)
        self.maintenance_since = Gauge(
            "maintenance_mode_since_timestamp_seconds",
            "When maintenance mode was switched on, in seconds since the epoch; 0 when off",
            registry=self.registry)
        self.health = Gauge("healthcheck_status", "Last health check result: 0 healthy, 1 degraded, 2 unhealthy",
                            ["component"], registry=self.registry)
        self.tasks = Counter("tasks", "Task status changes made by this node (submitted, started, ended ...)",
                             ["type", "status"], registry=self.registry)
        self._timers: dict[str, Histogram] = {}
        self._meters: dict[str, Counter] = {}
        self._gauges: dict[str, Gauge] = {}
        # Metrics are created on first use from many threads (SMTP, spooler, workers); a
        # registry refuses a second metric of the same name.
        self._lock = threading.Lock()

    def timer(self, name: str, doc: str = "") -> Histogram:
        """A James-named timer (``spoolProcessing``, ``SMTP-rcpt``, ``blobStore:saveBytes`` ...)."""
        metric = self._timers.get(name)
        if metric is None:
            with self._lock:
                metric = self._timers.get(name)
                if metric is None:
                    metric = Histogram(_sanitize(name), doc or f"James timer {name}", buckets=BUCKETS,
                                       registry=self.registry)
                    self._timers[name] = metric
        return metric

    def meter(self, name: str, doc: str = "") -> Counter:
        """A James meter (``localDeliveredMails``, ``enqueuedMail:spool`` ...), exposed as ``<name>_total``."""
        metric = self._meters.get(name)
        if metric is None:
            with self._lock:
                metric = self._meters.get(name)
                if metric is None:
                    metric = Counter(_sanitize(name), doc or f"James meter {name}", registry=self.registry)
                    self._meters[name] = metric
        return metric

    def gauge(self, name: str, read: Callable[[], float], doc: str = "") -> None:
        """A gauge read at scrape time (``mailQueueSize:spool``); registering a name again replaces the reader."""
        with self._lock:
            metric = self._gauges.get(name)
            if metric is None:
                metric = Gauge(_sanitize(name), doc or f"James gauge {name}", registry=self.registry)
                self._gauges[name] = metric
        metric.set_function(read)

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timer(name).observe(time.perf_counter() - start)

    def track_maintenance(self, state: Callable[[], SwitchState]) -> None:
        """Read the maintenance state at scrape time (through the guard's cache): on/off and since when."""
        self.maintenance.set_function(lambda: 1.0 if state().enabled else 0.0)
        self.maintenance_since.set_function(lambda: _since(state()))

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


def _since(state: SwitchState) -> float:
    if not state.enabled:
        return 0.0
    # On with no time recorded (a row written by hand): unknown, not "1970".
    return state.since.timestamp() if state.since is not None else float("nan")


def _sanitize(name: str) -> str:
    # Dropwizard's Prometheus exporter keeps [a-zA-Z0-9:_] and turns the rest into "_".
    cleaned = "".join(c if c.isalnum() or c in ":_" else "_" for c in name)
    return cleaned if not cleaned[0].isdigit() else "_" + cleaned
