"""Schema versions and migrations on keyspaces of our own, built in the shape older James releases left.

The main keyspace is at version 10 (James 3.7): incomplete messageIdTable/imapUidTable rows, the
attachmentMessageId table and the legacy quota tables. It is upgraded slice by slice, then to the
latest version, and re-running everything must change nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from mailserver.cassandra.migrations import MIGRATIONS, MigrationPartial, MigrationStatus, migrate
from mailserver.cassandra.migrations.legacy import LEGACY_TABLES
from mailserver.cassandra.migrations.message_denormalization import MessageDenormalizationMigration, remaining
from mailserver.cassandra.schema import TABLES, TABLES_BY_NAME, TYPES, Table, create_schema
from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import (
    SchemaState,
    SchemaVersionDAO,
    SchemaVersionError,
    initialize_schema,
    startup_check,
)

pytestmark = pytest.mark.integration

JANUARY, FEBRUARY, MARCH = (datetime(2023, m, 1, tzinfo=UTC) for m in (1, 2, 3))
META = ("internaldate", "bodystartoctet", "fullcontentoctets", "headercontent")


@contextmanager
def own_keyspace(cassandra_config, name: str, tables: Iterable[Table]) -> Iterator[CassandraSession]:
    config = dataclasses.replace(cassandra_config, keyspace=name)
    bootstrap = CassandraSession.connect(config, use_keyspace=False)
    try:
        create_schema(bootstrap.session, config, tuple(tables), TYPES)
        session = CassandraSession.connect(config)
        try:
            yield session
        finally:
            session.close()
    finally:
        bootstrap.session.execute(f"DROP KEYSPACE IF EXISTS {name}", timeout=120)   # schema changes can be slow
        bootstrap.close()


def tables(*names: str) -> list[Table]:
    return [TABLES_BY_NAME[n.lower()] for n in names]


def records(caplog) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("mailserver")]


def name_uuid(text: str) -> uuid.UUID:
    """Java's UUID.nameUUIDFromBytes: James's attachmentV2.idAsUUID for string attachment ids."""
    return uuid.UUID(bytes=hashlib.md5(text.encode(), usedforsecurity=False).digest(), version=3)


# -- old-shape data -------------------------------------------------------------------------------

def insert_message_v3(s: CassandraSession, internal_date: datetime, message_id: uuid.UUID | None = None) -> dict:
    mid = message_id or uuid.uuid1()
    row = {"internaldate": internal_date.replace(tzinfo=None), "bodystartoctet": 120,
           "fullcontentoctets": 1000 + internal_date.day, "headercontent": f"header-{mid}"}
    s.execute("INSERT INTO messageV3 (messageId, internalDate, bodyStartOctet, bodyOctets, fullContentOctets, "
              "bodyContent, headerContent) VALUES (?, ?, ?, ?, ?, ?, ?)",
              (mid, row["internaldate"], row["bodystartoctet"], row["fullcontentoctets"] - 120,
               row["fullcontentoctets"], f"body-{mid}", row["headercontent"]))
    return {"messageid": mid, **row}


def insert_old_copy(s: CassandraSession, mid: uuid.UUID, mailbox: uuid.UUID, uid: int, **meta) -> None:
    """A message in a mailbox as James 3.7 wrote it: no denormalized metadata (unless given)."""
    cols = {"threadId": mid, "modSeq": uid * 10, "flagSeen": True, **meta}
    names = ", ".join(cols)
    marks = ", ".join("?" for _ in cols)
    s.execute(f"INSERT INTO imapUidTable (messageId, mailboxId, uid, {names}) VALUES (?, ?, ?, {marks})",
              (mid, mailbox, uid, *cols.values()))
    s.execute(f"INSERT INTO messageIdTable (mailboxId, uid, messageId, {names}) VALUES (?, ?, ?, {marks})",
              (mailbox, uid, mid, *cols.values()))


def meta_of(s: CassandraSession, table: str, mailbox: uuid.UUID, uid: int, mid: uuid.UUID) -> dict:
    if table == "messageIdTable":
        row = s.one("SELECT * FROM messageIdTable WHERE mailboxId = ? AND uid = ?", (mailbox, uid))
    else:
        row = s.one("SELECT * FROM imapUidTable WHERE messageId = ? AND mailboxId = ? AND uid = ?",
                    (mid, mailbox, uid))
    return {k: row[k] for k in (*META, "modseq", "flagseen")}


def build_v10_data(s: CassandraSession) -> dict:
    inbox, archive = uuid.uuid1(), uuid.uuid1()
    jan1 = insert_message_v3(s, datetime(2023, 1, 15, 10, 0, tzinfo=UTC))
    jan2 = insert_message_v3(s, datetime(2023, 1, 31, 23, 59, 59, tzinfo=UTC))
    feb1 = insert_message_v3(s, datetime(2023, 2, 1, tzinfo=UTC))
    feb2 = insert_message_v3(s, datetime(2023, 2, 20, 8, 0, tzinfo=UTC))
    done = insert_message_v3(s, datetime(2023, 1, 2, tzinfo=UTC))
    copies = {  # (mailbox, uid) -> message
        (inbox, 1): jan1, (archive, 1): jan1, (inbox, 2): jan2, (inbox, 3): feb1, (inbox, 4): feb2, (inbox, 5): done}
    for (mailbox, uid), message in copies.items():
        if message is done:
            insert_old_copy(s, message["messageid"], mailbox, uid, **{k: message[k] for k in META})
        elif message is feb2:   # half denormalized: only the date is there
            insert_old_copy(s, message["messageid"], mailbox, uid, internalDate=message["internaldate"])
        else:
            insert_old_copy(s, message["messageid"], mailbox, uid)

    attachment_table = ("INSERT INTO attachmentV2 (idAsUUID, id, blobId, type, size, message_id) "
                        "VALUES (?, ?, ?, ?, ?, ?)")
    s.execute(attachment_table, (name_uuid("att-1"), "att-1", "blob-1", "application/pdf", 10, None))
    s.execute(attachment_table, (name_uuid("att-2"), "att-2", "blob-2", "image/png", 20, jan2["messageid"]))
    legacy = "INSERT INTO attachmentMessageId (attachmentIdAsUUID, messageId, attachmentId) VALUES (?, ?, ?)"
    for attachment, message in (("att-1", jan1), ("att-2", feb1), ("att-missing", feb2)):
        s.execute(legacy, (name_uuid(attachment), message["messageid"], attachment))

    for root, count, size in (("#private&bob@example.com", 3, 3000), ("#private&alice", 1, 10)):
        s.execute("UPDATE currentQuota SET messageCount = messageCount + ?, storage = storage + ? WHERE quotaRoot = ?",
                  (count, size, root))
    # Already counted once by a newer node: the migration must land on 3, not 4.
    s.execute("UPDATE quotaCurrentValue SET currentValue = currentValue + 1 "
              "WHERE identifier = ? AND quotaComponent = 'MAILBOX' AND quotaType = 'count'",
              ("#private&bob@example.com@example.com",))
    s.execute("INSERT INTO maxQuota (quotaRoot, maxMessageCount, maxStorage) VALUES (?, ?, ?)",
              ("#private&bob@example.com", 100, 1000))
    s.execute("INSERT INTO domainMaxQuota (domain, maxMessageCount) VALUES (?, ?)", ("example.com", 500))
    s.execute("INSERT INTO defaultMaxQuota2 (key, message, storage) VALUES ('default', ?, ?)", (1000, -1))

    s.execute("INSERT INTO sieve_cluster_quota (name, value) VALUES ('cluster_quota', ?)", (5000,))
    s.execute("INSERT INTO sieve_quota (user_name, quota) VALUES (?, ?)", ("bob@example.com", 2000))
    for user, used in (("bob@example.com", 123), ("alice", 7)):
        s.execute("UPDATE sieve_space SET space_used = space_used + ? WHERE user_name = ?", (used, user))

    SchemaVersionDAO(s).update_version(10)
    return {"copies": copies, "january": [jan1, jan2], "february": [feb1, feb2], "done": done,
            "jan1": jan1, "jan2": jan2}


def dump(s: CassandraSession) -> dict[str, list]:
    """Every row of the tables migrations write, in a comparable form."""
    names = ("messageIdTable", "imapUidTable", "attachmentV2", "quotaCurrentValue", "quotaLimit", "schemaVersion")
    return {n: sorted(sorted((k, repr(v)) for k, v in row.items()) for row in s.execute(f"SELECT * FROM {n}"))
            for n in names}


def quota_rows(s: CassandraSession) -> dict[str, dict]:
    return {
        "current": {(r["identifier"], r["quotacomponent"], r["quotatype"]): r["currentvalue"]
                    for r in s.execute("SELECT * FROM quotaCurrentValue")},
        "limits": {(r["quotascope"], r["identifier"], r["quotacomponent"], r["quotatype"]): r["quotalimit"]
                   for r in s.execute("SELECT * FROM quotaLimit")},
    }


# -- tests ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def versions_only(cassandra_config, unique):
    """A keyspace holding just the schemaVersion table, for the start-up states."""
    with own_keyspace(cassandra_config, f"sv_{unique}", tables("schemaVersion")) as session:
        yield session


@pytest.fixture
def version_rows(versions_only):
    def set_rows(*values: int) -> CassandraSession:
        versions_only.execute("TRUNCATE schemaVersion")
        for value in values:
            SchemaVersionDAO(versions_only).update_version(value)
        return versions_only

    return set_rows


@pytest.mark.parametrize(("rows", "level", "message"), [
    ((9,), logging.ERROR, "Current schema version is 9 whereas minimum required version is 10. "
                          "Recommended version is 15"),
    ((10, 16), logging.ERROR, "Current schema version is 16 whereas the maximum supported version is 15. "
                              "Recommended version is 15"),
])
def test_startup_refuses_versions_out_of_range(version_rows, caplog, rows, level, message):
    session = version_rows(*rows)

    with caplog.at_level(logging.INFO), pytest.raises(SchemaVersionError):
        startup_check(session)

    assert records(caplog) == [(level, message)]


@pytest.mark.parametrize(("rows", "state", "expected"), [
    ((10,), SchemaState.UPGRADABLE, [(logging.WARNING, "Current schema version is 10. Recommended version is 15")]),
    ((13, 10, 12), SchemaState.UPGRADABLE,
     [(logging.WARNING, "Current schema version is 13. Recommended version is 15")]),
    ((14, 15), SchemaState.UP_TO_DATE, [(logging.INFO, "Schema version is up-to-date")]),
    ((), SchemaState.UPGRADABLE,
     [(logging.WARNING, "No schema version information found on Cassandra, we assume schema is at version 12"),
      (logging.WARNING, "Current schema version is 12. Recommended version is 15")]),
])
def test_startup_accepts_supported_versions(version_rows, caplog, rows, state, expected):
    session = version_rows(*rows)

    with caplog.at_level(logging.INFO):
        assert startup_check(session) is state

    assert records(caplog) == expected


def test_initialize_writes_the_latest_version_only_on_a_fresh_keyspace(cassandra_config, unique, version_rows):
    config = dataclasses.replace(cassandra_config, keyspace=f"init_{unique}")
    few = tables("schemaVersion", "eventStore")
    try:
        assert initialize_schema(config, tables=few) is SchemaState.UP_TO_DATE
        assert initialize_schema(config, tables=few) is SchemaState.UP_TO_DATE
        with CassandraSession.connect(config) as session:
            assert [r["value"] for r in session.execute("SELECT value FROM schemaVersion")] == [15]
    finally:
        with CassandraSession.connect(config, use_keyspace=False) as admin:
            admin.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=120)

    # Tables already there and no version row: nothing is written, version 12 is assumed (as James).
    existing = version_rows()
    ks_config = dataclasses.replace(cassandra_config, keyspace=existing.keyspace)
    assert initialize_schema(ks_config, session=existing, tables=tables("schemaVersion")) is SchemaState.UPGRADABLE
    assert SchemaVersionDAO(existing).current_version() is None


@pytest.fixture(scope="module")
def v10(cassandra_config, unique):
    with own_keyspace(cassandra_config, f"v10_{unique}", (*TABLES, *LEGACY_TABLES)) as session:
        yield session, build_v10_data(session)


def test_upgrade_from_10_slice_by_slice_then_to_latest(v10, caplog):
    s, data = v10
    dao = SchemaVersionDAO(s)
    copies = data["copies"]

    def complete(message: dict) -> bool:
        keys = [(mb, uid) for (mb, uid), m in copies.items() if m is message]
        return all(meta_of(s, table, mb, uid, message["messageid"])[k] == message[k]
                   for table in ("messageIdTable", "imapUidTable") for mb, uid in keys for k in META)

    with caplog.at_level(logging.INFO):
        assert startup_check(s) is SchemaState.UPGRADABLE
    assert records(caplog) == [(logging.WARNING, "Current schema version is 10. Recommended version is 15")]
    assert remaining(s) == 2 * 5   # five incomplete copies, in both tables

    migration = MessageDenormalizationMigration(s)
    january = migration.run(JANUARY, FEBRUARY)

    assert january.status is MigrationStatus.COMPLETED
    assert (january.counters["fixed_message_id"], january.counters["fixed_imap_uid"]) == (3, 3)
    assert all(complete(m) for m in data["january"])
    assert not any(complete(m) for m in data["february"])
    assert migration.remaining() == 4
    assert dao.current_version() == 10

    february = migration.run(FEBRUARY, MARCH)

    assert (february.status, february.counters["fixed_message_id"], february.counters["fixed_imap_uid"]) == \
        (MigrationStatus.COMPLETED, 2, 2)
    assert all(complete(m) for m in (*data["january"], *data["february"], data["done"]))
    assert migration.remaining() == 0
    assert dao.current_version() == 10      # slices never bump the version
    # Untouched columns stay as they were.
    assert meta_of(s, "messageIdTable", *next(iter(copies)), data["jan1"]["messageid"])["modseq"] == 10

    # Final check: the runner's full pass finds nothing left, then bumps.
    final = migrate(s, target=11)
    assert final[11].status is MigrationStatus.COMPLETED
    assert final[11].counters["processed"] == 0
    assert dao.current_version() == 11

    results = migrate(s)

    assert sorted(results) == [12, 13, 14, 15]
    assert all(r.status is MigrationStatus.COMPLETED for r in results.values())
    assert dao.current_version() == 15
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assert startup_check(s) is SchemaState.UP_TO_DATE
    assert records(caplog) == [(logging.INFO, "Schema version is up-to-date")]

    # 11 -> 12: attachments know their message, an owner already recorded wins, no partial row appears.
    attachments = {r["id"]: r["message_id"] for r in s.execute("SELECT id, message_id FROM attachmentV2")}
    assert attachments == {"att-1": data["jan1"]["messageid"], "att-2": data["jan2"]["messageid"]}
    assert results[12].counters["missing_attachment"] == 1

    quotas = quota_rows(s)
    assert quotas["current"] == {
        ("#private&bob@example.com@example.com", "MAILBOX", "count"): 3,
        ("#private&bob@example.com@example.com", "MAILBOX", "size"): 3000,
        ("#private&alice", "MAILBOX", "count"): 1,
        ("#private&alice", "MAILBOX", "size"): 10,
        ("bob@example.com", "SIEVE", "size"): 123,
        ("alice", "SIEVE", "size"): 7,
    }
    assert quotas["limits"] == {
        ("global", "global", "MAILBOX", "count"): 1000,
        ("global", "global", "MAILBOX", "size"): -1,
        ("domain", "example.com", "MAILBOX", "count"): 500,
        ("user", "#private&bob@example.com", "MAILBOX", "count"): 100,
        ("user", "#private&bob@example.com", "MAILBOX", "size"): 1000,
        ("global", "GLOBAL", "SIEVE", "size"): 5000,
        ("user", "bob@example.com", "SIEVE", "size"): 2000,
    }

    # Re-running changes nothing: neither the runner (version reached) nor each migration forced again.
    before = dump(s)
    assert migrate(s) == {}
    for version in sorted(MIGRATIONS):
        assert MIGRATIONS[version](s, logging.getLogger("test")).run().status is MigrationStatus.COMPLETED
    assert migration.run(JANUARY, FEBRUARY).counters["processed"] == 0
    assert dump(s) == before


@pytest.fixture
def partial_keyspace(cassandra_config, unique):
    names = ("schemaVersion", "messageIdTable", "imapUidTable", "messageV3")
    with own_keyspace(cassandra_config, f"v10p_{unique}", tables(*names)) as session:
        SchemaVersionDAO(session).update_version(10)
        yield session


def test_a_message_without_messagev3_row_leaves_the_version_unbumped(partial_keyspace, caplog):
    s = partial_keyspace
    mailbox = uuid.uuid1()
    fine = insert_message_v3(s, datetime(2023, 1, 10, tzinfo=UTC))
    insert_old_copy(s, fine["messageid"], mailbox, 1)
    orphan = uuid.uuid1()
    insert_old_copy(s, orphan, mailbox, 2)

    with caplog.at_level(logging.INFO), pytest.raises(MigrationPartial) as raised:
        migrate(s, target=11)

    assert raised.value.version == 11
    assert raised.value.result.counters["errors"] == 2
    assert (logging.WARNING, "Migrating to version 11 partially done. Please check logs and re-run") in records(caplog)
    assert SchemaVersionDAO(s).current_version() == 10
    assert remaining(s) == 2                                   # only the orphan's two rows
    assert meta_of(s, "messageIdTable", mailbox, 1, fine["messageid"])["headercontent"] == fine["headercontent"]
    # A slice reports the orphan too: its date is unknown, it belongs to no slice.
    assert MessageDenormalizationMigration(s).run(JANUARY, FEBRUARY).status is MigrationStatus.PARTIAL

    late = insert_message_v3(s, datetime(2023, 3, 5, tzinfo=UTC), message_id=orphan)
    assert migrate(s, target=11)[11].counters["fixed_message_id"] == 1
    assert SchemaVersionDAO(s).current_version() == 11
    assert meta_of(s, "imapUidTable", mailbox, 2, orphan)["internaldate"] == late["internaldate"]
