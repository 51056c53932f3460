"""The maintenance-mode port: one cluster-wide switch (on/off, since when, why, by whom).

Why a stored switch rather than a per-process flag: an operator flips it once through any
WebAdmin node and every node (SMTP, IMAP, spooler, mailbox writers) sees it, because they all
read the same Cassandra row. James has no such route (webadmin reference §15); this is our
extension, under its own path (``/maintenance``) so it cannot collide with upstream routes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime


@dataclass(frozen=True)
class MaintenanceState:
    enabled: bool
    since: datetime | None = None     # when the current state was set (UTC)
    reason: str | None = None
    updated_by: str | None = None

    @classmethod
    def off(cls) -> MaintenanceState:
        """The state of a cluster where nobody ever switched maintenance on."""
        return cls(False)

    def to_json(self) -> dict[str, object]:
        return {"enabled": self.enabled,
                "since": self.since.isoformat().replace("+00:00", "Z") if self.since else None,
                "reason": self.reason, "updatedBy": self.updated_by}


def utc_now() -> datetime:
    # Millisecond precision: what a Cassandra ``timestamp`` keeps, so a state reads back equal.
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


class MaintenanceStore(ABC):
    @abstractmethod
    def get(self) -> MaintenanceState:
        """The current state; ``MaintenanceState.off()`` when never set."""

    @abstractmethod
    def put(self, state: MaintenanceState) -> None:
        """Replace the state (last writer wins: the switch is idempotent, no LWT needed)."""

    def enable(self, reason: str | None, updated_by: str | None) -> MaintenanceState:
        current = self.get()
        if current.enabled:
            # Keep the original "since": monitoring reports how long maintenance has lasted.
            state = MaintenanceState(True, current.since, reason or current.reason, updated_by)
        else:
            state = MaintenanceState(True, utc_now(), reason, updated_by)
        self.put(state)
        return state

    def disable(self, updated_by: str | None) -> MaintenanceState:
        state = MaintenanceState(False, utc_now(), None, updated_by)
        self.put(state)
        return state
