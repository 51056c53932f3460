"""What every migration shares: the result type, the base class, streaming scans and table existence."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar

from cassandra.query import SimpleStatement

from mailserver.cassandra.session import CassandraSession

SCAN_PAGE_SIZE = 1000


class MigrationStatus(StrEnum):
    COMPLETED = "COMPLETED"
    PARTIAL = "PARTIAL"


@dataclass
class MigrationResult:
    status: MigrationStatus
    counters: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, counters: Counter[str] | dict[str, int]) -> MigrationResult:
        """PARTIAL as soon as one unit of work failed (James's Task.combine: PARTIAL wins)."""
        status = MigrationStatus.PARTIAL if counters.get("errors") else MigrationStatus.COMPLETED
        return cls(status, dict(counters))

    @property
    def completed(self) -> bool:
        return self.status is MigrationStatus.COMPLETED


class Migration(ABC):
    """One schema transition. ``run`` is safe to re-run: it only writes what is still missing or different."""

    from_version: ClassVar[int]
    to_version: ClassVar[int]

    def __init__(self, session: CassandraSession, logger: logging.Logger | None = None) -> None:
        self.s = session
        self.log = logger or logging.getLogger(type(self).__module__)

    @abstractmethod
    def run(self) -> MigrationResult: ...


def scan(session: CassandraSession, cql: str) -> Iterator[dict[str, Any]]:
    """Rows page by page: full-table scans must not be materialised in memory (session.execute does)."""
    session.faults.check(cql)
    yield from session.session.execute(SimpleStatement(cql, fetch_size=SCAN_PAGE_SIZE))


def table_exists(session: CassandraSession, table: str) -> bool:
    """Legacy tables exist only in keyspaces that had them (e.g. James's quota compatibility mode)."""
    row = session.one("SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
                      (session.keyspace.lower(), table.lower()))
    return row is not None
