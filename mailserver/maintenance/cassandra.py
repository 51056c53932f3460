"""``MaintenanceStore`` on the one-row ``maintenance_mode`` table (key ``'cluster'``).

Cluster-wide because every node reads the same row. Writes are plain upserts at QUORUM and
reads are QUORUM too, so a state written through one node is read back by any other.

A state with a deadline is written with a Cassandra TTL: when it passes the row is gone, so the
cluster leaves maintenance even if no process is left to switch it off (the schema has no
column for the deadline; ``TTL(enabled)`` gives it back, to the second).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from mailserver.cassandra.session import CassandraSession
from mailserver.maintenance.api import MaintenanceState, MaintenanceStore, utc_now

ROW_KEY = "cluster"


class CassandraMaintenanceStore(MaintenanceStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def get(self) -> MaintenanceState:
        row = self.s.one("SELECT enabled, since, reason, updated_by, TTL(enabled) AS ttl FROM maintenance_mode "
                         "WHERE key = ?", (ROW_KEY,))
        if row is None:
            return MaintenanceState.off()
        now = utc_now()
        expires_at = now + timedelta(seconds=row["ttl"]) if row["ttl"] is not None else None
        state = MaintenanceState(bool(row["enabled"]), _aware(row["since"]), row["reason"], row["updated_by"],
                                 expires_at)
        return state.effective(now)

    def put(self, state: MaintenanceState) -> None:
        # TTL 0 means none: a state without a deadline also clears the TTL a previous one had.
        ttl = 0
        if state.expires_at is not None:
            ttl = max(1, math.ceil((state.expires_at - utc_now()).total_seconds()))
        self.s.execute("INSERT INTO maintenance_mode (key, enabled, since, reason, updated_by) VALUES (?, ?, ?, ?, ?) "
                       "USING TTL ?",
                       (ROW_KEY, state.enabled, state.since, state.reason, state.updated_by, ttl))


def _aware(value: datetime | None) -> datetime | None:
    # The driver returns naive datetimes that are UTC.
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
