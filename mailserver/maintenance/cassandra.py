"""``MaintenanceStore`` on the one-row ``maintenance_mode`` table (key ``'cluster'``).

Cluster-wide because every node reads the same row. Writes are plain upserts at QUORUM and
reads are QUORUM too, so a state written through one node is read back by any other.
"""

from __future__ import annotations

from datetime import UTC, datetime

from mailserver.cassandra.session import CassandraSession
from mailserver.maintenance.api import MaintenanceState, MaintenanceStore

ROW_KEY = "cluster"


class CassandraMaintenanceStore(MaintenanceStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def get(self) -> MaintenanceState:
        row = self.s.one("SELECT enabled, since, reason, updated_by FROM maintenance_mode WHERE key = ?", (ROW_KEY,))
        if row is None:
            return MaintenanceState.off()
        return MaintenanceState(bool(row["enabled"]), _aware(row["since"]), row["reason"], row["updated_by"])

    def put(self, state: MaintenanceState) -> None:
        self.s.execute("INSERT INTO maintenance_mode (key, enabled, since, reason, updated_by) VALUES (?, ?, ?, ?, ?)",
                       (ROW_KEY, state.enabled, state.since, state.reason, state.updated_by))


def _aware(value: datetime | None) -> datetime | None:
    # The driver returns naive datetimes that are UTC.
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)
