"""``VacationRepository`` on James's ``vacation`` table (``CassandraVacationDAO``).

One row per ``account_id``; a patch is one INSERT of the patched columns only (an upsert: the
others stay), a removed field written as null. Dates are James's ``zonedDateTime`` UDT: the
instant and the zone (here the UTC offset, ``Z`` for UTC), so the offset given is read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from mailserver.cassandra.session import CassandraSession
from mailserver.vacation.api import FIELDS, Vacation, VacationRepository

COLUMNS = {"enabled": "is_enabled", "from_date": "from_date", "to_date": "to_date",
           "subject": "subject", "text_body": "text", "html_body": "html"}
SELECT = "SELECT is_enabled, from_date, to_date, subject, text, html FROM vacation WHERE account_id = ?"


class CassandraVacationRepository(VacationRepository):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def get(self, account_id: str) -> Vacation:
        row = self.s.one(SELECT, (account_id,))
        if row is None:
            return Vacation()
        return Vacation(enabled=bool(row["is_enabled"]), from_date=_instant(row["from_date"]),
                        to_date=_instant(row["to_date"]), subject=row["subject"], text_body=row["text"],
                        html_body=row["html"])

    def modify(self, account_id: str, patch: Mapping[str, object]) -> None:
        unknown = set(patch) - FIELDS
        if unknown:
            raise ValueError(f"not vacation fields: {sorted(unknown)}")
        names = [name for name in COLUMNS if name in patch]
        values: list[Any] = [account_id]
        for name in names:
            value = patch[name]
            values.append(_zoned(value) if isinstance(value, datetime) else value)
        columns = ", ".join(["account_id", *(COLUMNS[name] for name in names)])
        marks = ", ".join("?" * len(values))
        self.s.execute(f"INSERT INTO vacation ({columns}) VALUES ({marks})", values)


def _zoned(moment: datetime) -> tuple[datetime, str]:
    offset = moment.utcoffset() or timedelta(0)
    zone = "Z" if not offset else moment.strftime("%z")
    zone = zone if zone == "Z" else f"{zone[:3]}:{zone[3:]}"
    return moment.astimezone(UTC).replace(tzinfo=None), zone


def _instant(udt: Any) -> datetime | None:
    if udt is None or udt.date is None:
        return None
    moment = udt.date.replace(tzinfo=UTC)
    zone = udt.timezone or "Z"   # the driver lower-cases the UDT's field names
    if zone in ("Z", "UTC"):
        return moment
    try:
        parsed = datetime.strptime(zone.replace(":", ""), "%z").tzinfo
    except ValueError:   # a region id (Europe/Paris) James may have written: read as UTC
        return moment
    assert isinstance(parsed, timezone)
    return moment.astimezone(parsed)
