"""In-memory ``MaintenanceStore``: one process only (unit tests, single-node development)."""

from __future__ import annotations

import threading

from mailserver.maintenance.api import MaintenanceState, MaintenanceStore, utc_now


class MemoryMaintenanceStore(MaintenanceStore):
    def __init__(self, state: MaintenanceState | None = None) -> None:
        self._state = state or MaintenanceState.off()
        self._lock = threading.Lock()

    def get(self) -> MaintenanceState:
        with self._lock:
            return self._state.effective(utc_now())

    def put(self, state: MaintenanceState) -> None:
        with self._lock:
            self._state = state
