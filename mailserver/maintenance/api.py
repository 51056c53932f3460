"""The maintenance-mode port: one cluster-wide switch (on/off, since when, why, by whom).

Why a stored switch rather than a per-process flag: an operator flips it once through any
WebAdmin node and every node (SMTP, IMAP, spooler, mailbox writers) sees it, because they all
read the same Cassandra row. James has no such route (webadmin reference §15); this is our
extension, under its own path (``/maintenance``) so it cannot collide with upstream routes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta


@dataclass(frozen=True)
class MaintenanceState:
    enabled: bool
    since: datetime | None = None     # when the current state was set (UTC)
    reason: str | None = None
    updated_by: str | None = None
    # When the server leaves maintenance by itself (UTC); None: only an explicit switch-off ends it.
    # A repair run sets one so that a crashed or killed run cannot keep mail refused for ever.
    expires_at: datetime | None = None

    @classmethod
    def off(cls) -> MaintenanceState:
        """The state of a cluster where nobody ever switched maintenance on."""
        return cls(False)

    def effective(self, now: datetime) -> MaintenanceState:
        """This state as it stands at ``now``: off once its deadline has passed."""
        if self.enabled and self.expires_at is not None and now >= self.expires_at:
            return MaintenanceState(False, self.expires_at, None, self.updated_by)
        return self

    def to_json(self) -> dict[str, object]:
        return {"enabled": self.enabled, "since": _iso(self.since), "reason": self.reason,
                "updatedBy": self.updated_by, "expiresAt": _iso(self.expires_at)}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


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

    def enable(self, reason: str | None, updated_by: str | None,
               max_duration: timedelta | None = None) -> MaintenanceState:
        """Switch on; with ``max_duration`` the cluster leaves maintenance by itself that long from now
        (a later call sets a new deadline, or none)."""
        current = self.get()
        now = utc_now()
        expires_at = now + max_duration if max_duration is not None else None
        if current.enabled:
            # Keep the original "since": monitoring reports how long maintenance has lasted.
            state = MaintenanceState(True, current.since, reason or current.reason, updated_by, expires_at)
        else:
            state = MaintenanceState(True, now, reason, updated_by, expires_at)
        self.put(state)
        return state

    def disable(self, updated_by: str | None) -> MaintenanceState:
        state = MaintenanceState(False, utc_now(), None, updated_by)
        self.put(state)
        return state
