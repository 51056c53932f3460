"""The change logs on James's tables ``mailbox_change`` and ``email_change``: partition
``account_id`` (the username), clustering ``state`` (timeuuid, ascending), rows kept 60 days
(James's ``CassandraChangesConfiguration`` default TTL)."""

from __future__ import annotations

import uuid
from datetime import UTC, timedelta
from typing import Any

from mailserver.cassandra.session import CassandraSession
from mailserver.jmap.changes.model import DEFAULT_LIMIT, INITIAL, Change
from mailserver.jmap.changes.repository import MAILBOX_CHANGE, ChangeRepository

DEFAULT_TTL = timedelta(days=60)


class CassandraChangeRepository(ChangeRepository):
    def __init__(self, session: CassandraSession, table: str, default_limit: int = DEFAULT_LIMIT,
                 ttl: timedelta = DEFAULT_TTL) -> None:
        super().__init__(table, default_limit)
        self.s, self.ttl = session, int(ttl.total_seconds())
        self._count = ", is_count_change" if table == MAILBOX_CHANGE else ""
        self._columns = f"state, date, is_delegated{self._count}, created, updated, destroyed"

    def save(self, change: Change) -> None:
        values: list[Any] = [change.account_id, change.state, _zoned(change), change.is_delegated]
        if self._count:
            values.append(change.is_count_change)
        values += [set(change.created), set(change.updated), set(change.destroyed), self.ttl]
        marks = ", ".join("?" * (len(values) - 1))
        self.s.execute(f"INSERT INTO {self.table} (account_id, {self._columns}) VALUES ({marks}) USING TTL ?",
                       values)

    def _page(self, account_id: str, after: uuid.UUID | None, inclusive: bool, size: int) -> list[Change]:
        select = f"SELECT {self._columns} FROM {self.table} WHERE account_id = ?"
        if after is None:
            rows = self.s.execute(select + " LIMIT ?", (account_id, size))
        else:
            bound = ">=" if inclusive else ">"
            rows = self.s.execute(select + f" AND state {bound} ? LIMIT ?", (account_id, after, size))
        return [self._change(account_id, row) for row in rows]

    def latest_state(self, account_id: str, *, with_delegation: bool = False) -> uuid.UUID:
        if with_delegation:
            row = self.s.one(f"SELECT state FROM {self.table} WHERE account_id = ? ORDER BY state DESC LIMIT 1",
                             (account_id,))
        else:   # as James: filtering one partition, newest first
            row = self.s.one(f"SELECT state FROM {self.table} WHERE account_id = ? AND is_delegated = false "
                             "ORDER BY state DESC LIMIT 1 ALLOW FILTERING", (account_id,))
        return row["state"] if row else INITIAL

    def _change(self, account_id: str, row: dict[str, Any]) -> Change:
        date = row["date"].date if row["date"] is not None else None
        return Change(account_id, created=_ids(row["created"]), updated=_ids(row["updated"]),
                      destroyed=_ids(row["destroyed"]), is_delegated=bool(row["is_delegated"]),
                      is_count_change=bool(row.get("is_count_change")), state=row["state"],
                      **({"date": date.replace(tzinfo=UTC)} if date is not None else {}))


def _ids(values: Any) -> tuple[uuid.UUID, ...]:
    return tuple(sorted(values or (), key=str))


def _zoned(change: Change) -> tuple[Any, str]:
    """James's ``zonedDateTime`` UDT: the instant and the zone id (UTC here)."""
    return change.date, "Z"
