"""A keyspace at schema version 10 with old-shape data over three months, and CQL checks of the 10 -> 11 step.

Built with the builder of ``tests/integration/cassandra/test_schema_versions.py`` (James 3.7 rows:
incomplete messageIdTable/imapUidTable rows, legacy attachment and quota tables), plus more
messages spread over January, February and March 2023 so date slices have work of their own.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from mailserver.cassandra.migrations.legacy import LEGACY_TABLES
from mailserver.cassandra.schema import TABLES
from mailserver.cassandra.session import CassandraSession
from tests.integration.cassandra.test_schema_versions import (
    META,
    build_v10_data,
    insert_message_v3,
    insert_old_copy,
    own_keyspace,
)

JANUARY, FEBRUARY, MARCH, APRIL = (datetime(2023, m, 1, tzinfo=UTC) for m in (1, 2, 3, 4))
MONTHS = ((JANUARY, FEBRUARY), (FEBRUARY, MARCH), (MARCH, APRIL))
_TABLES = ("messageIdTable", "imapUidTable")


@dataclass
class V10Data:
    base: dict                                            # what build_v10_data returned
    copies: dict[tuple[uuid.UUID, int], dict] = field(default_factory=dict)   # (mailbox, uid) -> message


@contextmanager
def v10_keyspace(cassandra_config, name: str, per_month: int = 8) -> Iterator[tuple[CassandraSession, V10Data]]:
    with own_keyspace(cassandra_config, name, (*TABLES, *LEGACY_TABLES)) as session:
        yield session, build_three_months(session, per_month)


def build_three_months(s: CassandraSession, per_month: int) -> V10Data:
    data = V10Data(build_v10_data(s))
    data.copies.update(data.base["copies"])
    mailboxes = [uuid.uuid1() for _ in range(3)]
    for month, _ in MONTHS:
        for i in range(per_month):
            message = insert_message_v3(s, month + timedelta(days=i * 3, hours=i))
            for n, mailbox in enumerate(mailboxes[: 1 + i % 3]):   # some messages are in several mailboxes
                uid = 1000 * month.month + i
                meta = {"internalDate": message["internaldate"]} if (i + n) % 4 == 0 else {}   # half done
                insert_old_copy(s, message["messageid"], mailbox, uid, **meta)
                data.copies[(mailbox, uid)] = message
    return data


def month_of(date: datetime | None) -> str:
    return "undated" if date is None else f"{date:%Y-%m}"


def _incomplete_rows(s: CassandraSession) -> Iterator[tuple[str, dict]]:
    """(table, row) of every row of both tables still missing metadata."""
    for table in _TABLES:
        for row in s.execute(f"SELECT messageid, {', '.join(META)} FROM {table}"):
            if row["messageid"] is not None and any(row[k] is None for k in META):
                yield table, row


def incomplete_by_month(s: CassandraSession) -> Counter[str]:
    """Rows of both tables still missing metadata, by their message's month (messageV3 read with CQL)."""
    dates = {r["messageid"]: r["internaldate"] for r in s.execute("SELECT messageid, internaldate FROM messageV3")}
    return Counter(month_of(dates.get(row["messageid"])) for _, row in _incomplete_rows(s))


def incomplete_by_table(s: CassandraSession) -> Counter[str]:
    """Rows still missing metadata, by table (CQL): what a full-range 10 -> 11 run has to fix."""
    return Counter(table for table, _ in _incomplete_rows(s))


def james_tables(s: CassandraSession) -> list[str]:
    """Every table of the keyspace but the maintenance jobs' own bookkeeping (checkpoints, audit)."""
    return sorted(name for name in s.cluster.metadata.keyspaces[s.keyspace].tables
                  if not name.startswith("maintenance_"))


def rows_digest(s: CassandraSession, months: set[str]) -> str:
    """Digest of every row of both tables whose message is in ``months``: equal = those rows untouched."""
    dates = {r["messageid"]: r["internaldate"] for r in s.execute("SELECT messageid, internaldate FROM messageV3")}
    digest = hashlib.sha256()
    for table in _TABLES:
        rows = sorted(repr(sorted(r.items())) for r in s.execute(f"SELECT * FROM {table}")
                      if month_of(dates.get(r["messageid"])) in months)
        digest.update(f"{table}:{len(rows)}".encode())
        for row in rows:
            digest.update(row.encode())
    return digest.hexdigest()


def all_complete(s: CassandraSession, data: V10Data) -> bool:
    """Every copy carries its message's metadata in both tables, and nothing else changed."""
    for (mailbox, uid), message in data.copies.items():
        projection = s.one("SELECT * FROM messageIdTable WHERE mailboxId = ? AND uid = ?", (mailbox, uid))
        truth = s.one("SELECT * FROM imapUidTable WHERE messageId = ? AND mailboxId = ? AND uid = ?",
                      (message["messageid"], mailbox, uid))
        for row in (projection, truth):
            if row is None or any(row[k] != message[k] for k in META) or row["modseq"] != uid * 10:
                return False
    return True


def versions(s: CassandraSession) -> list[int]:
    return sorted(r["value"] for r in s.execute("SELECT value FROM schemaVersion"))
