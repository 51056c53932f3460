"""Schema version states, start-up check and migration runner, on a fake session (no Cassandra)."""

from __future__ import annotations

import logging

import pytest

from mailserver.cassandra.migrations import MIGRATIONS, MigrationError, MigrationPartial, migrate
from mailserver.cassandra.migrations.base import Migration, MigrationResult, MigrationStatus
from mailserver.cassandra.versions import (
    LATEST,
    MAX_VERSION,
    MIN_VERSION,
    SchemaState,
    SchemaVersionDAO,
    SchemaVersionError,
    compute_state,
    startup_check,
)
from tests.support.schema_version_session import FakeSchemaSession


def test_supported_range_is_10_to_15():
    assert (MIN_VERSION, MAX_VERSION, LATEST) == (10, 15, 15)
    assert sorted(MIGRATIONS) == [11, 12, 13, 14, 15]
    assert all(MIGRATIONS[v].from_version == v - 1 and MIGRATIONS[v].to_version == v for v in MIGRATIONS)


@pytest.mark.parametrize(("version", "state"), [
    (1, SchemaState.TOO_OLD), (9, SchemaState.TOO_OLD), (10, SchemaState.UPGRADABLE), (12, SchemaState.UPGRADABLE),
    (14, SchemaState.UPGRADABLE), (15, SchemaState.UP_TO_DATE), (16, SchemaState.TOO_RECENT)])
def test_state_of_a_version(version, state):
    assert compute_state(version) is state


def test_current_version_is_the_maximum_row():
    assert SchemaVersionDAO(FakeSchemaSession(10, 13, 11)).current_version() == 13
    assert SchemaVersionDAO(FakeSchemaSession()).current_version() is None


def test_update_appends_a_row():
    session = FakeSchemaSession(10)

    SchemaVersionDAO(session).update_version(11)

    assert session.versions == [10, 11]


def _records(caplog) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records]


def test_upgradable_warns(caplog):
    with caplog.at_level(logging.INFO):
        assert startup_check(FakeSchemaSession(10, 12)) is SchemaState.UPGRADABLE
    assert _records(caplog) == [(logging.WARNING, "Current schema version is 12. Recommended version is 15")]


def test_up_to_date_informs(caplog):
    with caplog.at_level(logging.INFO):
        assert startup_check(FakeSchemaSession(15)) is SchemaState.UP_TO_DATE
    assert _records(caplog) == [(logging.INFO, "Schema version is up-to-date")]


def test_too_old_refuses_to_start(caplog):
    with caplog.at_level(logging.INFO), pytest.raises(SchemaVersionError):
        startup_check(FakeSchemaSession(9))
    assert _records(caplog) == [(logging.ERROR, "Current schema version is 9 whereas minimum required version is 10. "
                                                "Recommended version is 15")]


def test_too_recent_refuses_to_start(caplog):
    with caplog.at_level(logging.INFO), pytest.raises(SchemaVersionError):
        startup_check(FakeSchemaSession(16))
    assert _records(caplog) == [(logging.ERROR, "Current schema version is 16 whereas the maximum supported "
                                                "version is 15. Recommended version is 15")]


def test_no_version_row_assumes_james_default_version_12(caplog):
    with caplog.at_level(logging.INFO):
        assert startup_check(FakeSchemaSession()) is SchemaState.UPGRADABLE
    assert _records(caplog) == [
        (logging.WARNING, "No schema version information found on Cassandra, we assume schema is at version 12"),
        (logging.WARNING, "Current schema version is 12. Recommended version is 15")]


def test_runner_on_a_keyspace_without_version_rows_starts_after_12():
    session, ran = FakeSchemaSession(), []
    registry = {v: fake_migration(v, ran=ran) for v in range(11, 16)}

    migrate(session, migrations=registry)

    assert ran == [13, 14, 15]
    assert session.versions == [13, 14, 15]


def fake_migration(to: int, status: MigrationStatus = MigrationStatus.COMPLETED, ran: list[int] | None = None,
                   boom: bool = False):
    class Fake(Migration):
        from_version = to - 1
        to_version = to

        def run(self) -> MigrationResult:
            if ran is not None:
                ran.append(to)
            if boom:
                raise RuntimeError("unexpected")
            return MigrationResult(status, {"errors": int(status is MigrationStatus.PARTIAL)})

    return Fake


def test_runner_applies_each_transition_and_bumps_after_each():
    session, ran = FakeSchemaSession(10), []
    registry = {v: fake_migration(v, ran=ran) for v in range(11, 16)}

    results = migrate(session, migrations=registry)

    assert ran == [11, 12, 13, 14, 15]
    assert sorted(results) == [11, 12, 13, 14, 15]
    assert session.versions == [10, 11, 12, 13, 14, 15]


def test_runner_stops_at_the_target_and_skips_reached_versions():
    session, ran = FakeSchemaSession(12), []
    registry = {v: fake_migration(v, ran=ran) for v in range(11, 16)}

    migrate(session, target=14, migrations=registry)
    migrate(session, target=14, migrations=registry)

    assert ran == [13, 14]
    assert max(session.versions) == 14


@pytest.mark.parametrize("boom", [False, True])
def test_partial_migration_does_not_bump_and_stops(caplog, boom):
    session, ran = FakeSchemaSession(10), []
    registry = {11: fake_migration(11, ran=ran), 12: fake_migration(12, MigrationStatus.PARTIAL, ran, boom),
                13: fake_migration(13, ran=ran)}

    with caplog.at_level(logging.WARNING), pytest.raises(MigrationPartial) as raised:
        migrate(session, target=13, migrations=registry)

    assert raised.value.version == 12
    assert ran == [11, 12]
    assert max(session.versions) == 11
    assert (logging.WARNING, "Migrating to version 12 partially done. Please check logs and re-run") \
        in _records(caplog)


def test_runner_refuses_a_target_without_migrations():
    session = FakeSchemaSession(14)

    with pytest.raises(MigrationError):
        migrate(session, target=16, migrations={15: fake_migration(15)})
    assert session.versions == [14]
