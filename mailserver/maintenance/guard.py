"""The hot-path view of maintenance mode: a cached read plus the two guards callers use.

Why a cache: ``writes_allowed`` runs on every mailbox write and ``smtp_allowed`` on every SMTP
transaction; querying Cassandra each time would double the load of the hot path for a switch
that changes a few times a year. The state is re-read at most every ``ttl`` seconds, so a
switch made on another node takes effect here within ``ttl`` (a couple of seconds).

If the store cannot be read the last known state is kept (fail-static): a Cassandra hiccup
must neither stop all writes nor silently end a maintenance window. A window's deadline
(``expires_at``) is the exception: it ends the window here too, store readable or not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime

from mailserver.mailbox.errors import MaintenanceMode
from mailserver.maintenance.api import MaintenanceState, MaintenanceStore, utc_now

log = logging.getLogger(__name__)

DEFAULT_TTL = 2.0


class MaintenanceGuard:
    def __init__(self, store: MaintenanceStore, *, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.monotonic,
                 wall_clock: Callable[[], datetime] = utc_now) -> None:
        self.store = store
        self.ttl = ttl
        self._clock = clock
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._state: MaintenanceState | None = None
        self._read_at = 0.0

    def state(self) -> MaintenanceState:
        return self._read().effective(self._wall_clock())

    def _read(self) -> MaintenanceState:
        now = self._clock()
        with self._lock:
            cached = self._fresh(now)
        if cached is not None:
            return cached
        try:
            fresh = self.store.get()
        except Exception:
            log.warning("cannot read the maintenance mode state; keeping the last known one", exc_info=True)
            with self._lock:
                self._read_at = now   # do not hammer a failing store either
                return self._state or MaintenanceState.off()
        with self._lock:
            self._state, self._read_at = fresh, now
            return fresh

    def in_maintenance_if_known(self) -> bool | None:
        """Whether maintenance is on, from the cached state only: None when it is stale (``state()`` reads)."""
        with self._lock:
            cached = self._fresh(self._clock())
        return cached.effective(self._wall_clock()).enabled if cached is not None else None

    def _fresh(self, now: float) -> MaintenanceState | None:
        """The cached state while it is younger than ``ttl`` (call with the lock held)."""
        if self._state is not None and now - self._read_at < self.ttl:
            return self._state
        return None

    def invalidate(self) -> None:
        """Forget the cached state (after this node changed it, so it applies here at once)."""
        with self._lock:
            self._state = None

    def writes_allowed(self) -> None:
        """The mailbox manager's ``write_guard``: raises ``MaintenanceMode`` while maintenance is on."""
        state = self.state()
        if state.enabled:
            since = state.since.isoformat() if state.since else "an unknown time"
            raise MaintenanceMode(f"the cluster is in maintenance mode since {since}"
                                  + (f" ({state.reason})" if state.reason else "") + "; writes are refused")

    def smtp_allowed(self) -> bool:
        """For the SMTP server: False while maintenance is on (answer 421 and close)."""
        return not self.state().enabled
