"""Run the migrations up to a target version (James's MigrationTask).

For each transition from current+1 to the target: re-read the version (another runner may have
done it), run the migration, and bump the version only when it COMPLETED. A PARTIAL migration
stops the run without bumping: fix what the logs report and re-run (migrations are idempotent).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from mailserver.cassandra.migrations.attachment_message_id import AttachmentMessageIdMigration
from mailserver.cassandra.migrations.base import Migration, MigrationResult, MigrationStatus
from mailserver.cassandra.migrations.current_quota import CurrentQuotaMigration
from mailserver.cassandra.migrations.max_quota import MaxQuotaMigration
from mailserver.cassandra.migrations.message_denormalization import MessageDenormalizationMigration
from mailserver.cassandra.migrations.sieve_quota import SieveQuotaMigration
from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import LATEST, SchemaVersionDAO

LOGGER = logging.getLogger(__name__)

MigrationFactory = Callable[[CassandraSession, logging.Logger], Migration]

# to_version -> migration reaching it
MIGRATIONS: Mapping[int, MigrationFactory] = {
    m.to_version: m for m in (MessageDenormalizationMigration, AttachmentMessageIdMigration,
                              CurrentQuotaMigration, MaxQuotaMigration, SieveQuotaMigration)
}


class MigrationError(RuntimeError):
    """No migration leads to the requested version."""


class MigrationPartial(RuntimeError):
    def __init__(self, version: int, result: MigrationResult) -> None:
        super().__init__(f"Migrating to version {version} partially done: {result.counters}")
        self.version = version
        self.result = result


def migrate(session: CassandraSession, target: int | None = None, logger: logging.Logger = LOGGER,
            migrations: Mapping[int, MigrationFactory] = MIGRATIONS) -> dict[int, MigrationResult]:
    """Results of the migrations that ran, by version reached. ``session`` must use the keyspace."""
    target = LATEST if target is None else target
    dao = SchemaVersionDAO(session)
    start = dao.version_or_default(logger)
    # Checked up front, like James's webadmin: never start an upgrade that cannot reach its target.
    missing = [v for v in range(start + 1, target + 1) if v not in migrations]
    if missing:
        raise MigrationError(f"No migration to version(s) {missing}: cannot upgrade from {start} to {target}")
    results: dict[int, MigrationResult] = {}
    for version in range(start + 1, target + 1):
        if dao.version_or_default(logger) >= version:
            logger.info("Schema version %d already reached: skipping its migration", version)
            continue
        logger.info("Migrating to version %d", version)
        results[version] = result = _run(migrations[version](session, logger), logger)
        if result.status is not MigrationStatus.COMPLETED:
            logger.warning("Migrating to version %d partially done. Please check logs and re-run", version)
            raise MigrationPartial(version, result)
        dao.update_version(version)
        logger.info("Migrating to version %d done: %s", version, result.counters)
    return results


def _run(migration: Migration, logger: logging.Logger) -> MigrationResult:
    """James's Migration.runTask: an unexpected failure is a PARTIAL result, never a crash of the runner."""
    try:
        return migration.run()
    except Exception:
        logger.exception("Migration %s failed", type(migration).__name__)
        return MigrationResult(MigrationStatus.PARTIAL, {"errors": 1})
