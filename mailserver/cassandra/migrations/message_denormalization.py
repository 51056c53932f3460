"""10 -> 11: fill internalDate, bodyStartOctet, fullContentOctets and headerContent into messageIdTable
rows, then imapUidTable rows, from messageV3 (James's MessageDenormalizationMigration).

A row is incomplete while one of the four is null. The work can be cut into internal-date slices
(``run(from, to)``: only messages whose messageV3.internalDate is in [from, to)), e.g. one Airflow
backfill run per month; slices never bump the version. ``remaining`` counts what is still
incomplete, and the runner's full run (no range) is the final check that bumps the version.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from datetime import UTC, datetime
from typing import Any

from mailserver.cassandra.migrations.base import Migration, MigrationResult, scan
from mailserver.cassandra.session import CassandraSession

COLUMNS = ("internalDate", "bodyStartOctet", "fullContentOctets", "headerContent")
_KEYS = tuple(c.lower() for c in COLUMNS)
_SET = ", ".join(f"{c} = ?" for c in COLUMNS)

SCAN_MESSAGE_ID = f"SELECT mailboxId, uid, messageId, {', '.join(COLUMNS)} FROM messageIdTable"
SCAN_IMAP_UID = f"SELECT messageId, mailboxId, uid, {', '.join(COLUMNS)} FROM imapUidTable"
SELECT_MESSAGE = f"SELECT {', '.join(COLUMNS)} FROM messageV3 WHERE messageId = ?"
# Conditional, so a row expunged meanwhile is not resurrected as a partial row; imapUidTable is
# written with LWTs anyway (James's strong consistency on the source of truth).
UPDATE_MESSAGE_ID = f"UPDATE messageIdTable SET {_SET} WHERE mailboxId = ? AND uid = ? IF messageId = ?"
UPDATE_IMAP_UID = f"UPDATE imapUidTable SET {_SET} WHERE messageId = ? AND mailboxId = ? AND uid = ? IF EXISTS"

_CACHE_SIZE = 10_000


def incomplete(row: dict[str, Any]) -> bool:
    # A messageIdTable row without messageId is a partial write James ignores (and deletes): not ours to fix.
    return row["messageid"] is not None and any(row[k] is None for k in _KEYS)


def remaining(session: CassandraSession) -> int:
    """Incomplete rows in both tables: 0 means every slice was done."""
    return sum(1 for cql in (SCAN_MESSAGE_ID, SCAN_IMAP_UID) for row in scan(session, cql) if incomplete(row))


def _naive_utc(value: datetime | None) -> datetime | None:
    """The driver returns timestamps as naive UTC datetimes."""
    if value is None or value.tzinfo is None:
        return value
    return value.astimezone(UTC).replace(tzinfo=None)


def _in_range(date: datetime | None, start: datetime | None, end: datetime | None) -> bool:
    """[start, end); an unknown date belongs to no bounded slice: the full run reports it as an error."""
    if date is None:
        return start is None and end is None
    return (start is None or date >= start) and (end is None or date < end)


class MessageDenormalizationMigration(Migration):
    from_version = 10
    to_version = 11

    def remaining(self) -> int:
        return remaining(self.s)

    def run(self, internal_date_from: datetime | None = None,
            internal_date_to: datetime | None = None) -> MigrationResult:
        start, end = _naive_utc(internal_date_from), _naive_utc(internal_date_to)
        counters: Counter[str] = Counter(processed=0, fixed_message_id=0, fixed_imap_uid=0, errors=0)
        cache: OrderedDict = OrderedDict()   # the imapUidTable pass reads the same messages again
        passes = ((SCAN_MESSAGE_ID, "messageIdTable", "fixed_message_id"),
                  (SCAN_IMAP_UID, "imapUidTable", "fixed_imap_uid"))
        for cql, table, fixed in passes:
            for row in scan(self.s, cql):
                if not incomplete(row):
                    continue
                outcome = self._fix(table, row, start, end, cache)
                if outcome != "out_of_range":
                    counters["processed"] += 1
                counters[fixed if outcome == "fixed" else outcome] += 1
        return MigrationResult.of(counters)

    def _fix(self, table: str, row: dict[str, Any], start: datetime | None, end: datetime | None,
             cache: OrderedDict) -> str:
        where = f"message {row['messageid']} in mailbox {row['mailboxid']} uid {row['uid']} ({table})"
        try:
            source = self._message(row["messageid"], cache)
            if source is None:
                self.log.error("Cannot denormalize %s: its messageV3 row is missing", where)
                return "errors"
            if not _in_range(source["internaldate"] or row["internaldate"], start, end):
                return "out_of_range"
            # Fill only what is missing: values already denormalized are kept.
            values = [row[k] if row[k] is not None else source[k] for k in _KEYS]
            if any(v is None for v in values):
                self.log.error("Cannot denormalize %s: messageV3 lacks %s", where,
                               [c for c, v in zip(COLUMNS, values, strict=True) if v is None])
                return "errors"
            if table == "messageIdTable":
                applied = self.s.execute_lwt(UPDATE_MESSAGE_ID, (*values, row["mailboxid"], row["uid"],
                                                                 row["messageid"]))
            else:
                applied = self.s.execute_lwt(UPDATE_IMAP_UID, (*values, row["messageid"], row["mailboxid"],
                                                               row["uid"]))
            return "fixed" if applied else "vanished"   # expunged meanwhile: nothing left to fix
        except Exception:
            self.log.exception("Failed to denormalize %s", where)
            return "errors"

    def _message(self, message_id: Any, cache: OrderedDict) -> dict[str, Any] | None:
        if message_id in cache:
            cache.move_to_end(message_id)
            return cache[message_id]
        row = self.s.one(SELECT_MESSAGE, (message_id,))
        cache[message_id] = row
        if len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
        return row
