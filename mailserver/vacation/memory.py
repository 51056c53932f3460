"""``VacationRepository`` in memory (tests, single-process runs)."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from mailserver.vacation.api import DISABLED, Vacation, VacationRepository, patched


class MemoryVacationRepository(VacationRepository):
    def __init__(self) -> None:
        self._vacations: dict[str, Vacation] = {}
        self._lock = threading.Lock()

    def get(self, account_id: str) -> Vacation:
        with self._lock:
            return self._vacations.get(account_id, DISABLED)

    def modify(self, account_id: str, patch: Mapping[str, object]) -> None:
        with self._lock:
            self._vacations[account_id] = patched(self._vacations.get(account_id, DISABLED), patch)
