"""Schema versions, James numbering: the ``schemaVersion`` table and the start-up check.

Supported range: 10..15. James HEAD supports 12..15; we keep the 10->11 and 11->12 migrations so
keyspaces written by James 3.7/3.8 upgrade in place (see docs/compatibility.md). A keyspace
without version rows is read as James reads it (12), so both kinds of node agree on its version.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from enum import Enum

from mailserver.cassandra.config import CassandraConfig, validate_identifier
from mailserver.cassandra.schema import TABLES, TYPES, Table, UserType, create_schema
from mailserver.cassandra.session import CassandraSession

MIN_VERSION = 10
MAX_VERSION = 15
LATEST = MAX_VERSION
# James's CassandraSchemaVersionManager.DEFAULT_VERSION (its MIN_VERSION, 12): what a keyspace without
# version rows is assumed to be at, by the start-up check and by every migration runner.
DEFAULT_VERSION = 12

LOGGER = logging.getLogger(__name__)


class SchemaVersionError(RuntimeError):
    """The keyspace's schema version is outside the supported range: refuse to start."""


class SchemaState(Enum):
    TOO_OLD = "too_old"
    UPGRADABLE = "upgradable"
    UP_TO_DATE = "up_to_date"
    TOO_RECENT = "too_recent"


def compute_state(version: int, min_version: int = MIN_VERSION, max_version: int = MAX_VERSION) -> SchemaState:
    if version < min_version:
        return SchemaState.TOO_OLD
    if version < max_version:
        return SchemaState.UPGRADABLE
    if version == max_version:
        return SchemaState.UP_TO_DATE
    return SchemaState.TOO_RECENT


class SchemaVersionDAO:
    """Each upgrade appends a row (new timeuuid, version); the current version is the maximum value."""

    def __init__(self, session: CassandraSession, keyspace: str | None = None) -> None:
        self.s = session
        # Qualified, so a session without a current keyspace (start-up bootstrap) works too.
        self.table = f"{validate_identifier(keyspace or session.keyspace, 'keyspace name')}.schemaVersion"

    def current_version(self) -> int | None:
        rows = self.s.execute(f"SELECT value FROM {self.table}")   # a full scan, as in James
        values = [r["value"] for r in rows if r["value"] is not None]
        return max(values) if values else None

    def version_or_default(self, logger: logging.Logger = LOGGER) -> int:
        version = self.current_version()
        if version is None:
            logger.warning("No schema version information found on Cassandra, we assume schema is at version %d",
                           DEFAULT_VERSION)
            return DEFAULT_VERSION
        return version

    def update_version(self, version: int) -> None:
        self.s.execute(f"INSERT INTO {self.table} (key, value) VALUES (?, ?)", (uuid.uuid1(), version))


def startup_check(session: CassandraSession, logger: logging.Logger = LOGGER, *,
                  keyspace: str | None = None) -> SchemaState:
    """James's CassandraSchemaVersionStartUpCheck: log the state; raise when the server must not start."""
    version = SchemaVersionDAO(session, keyspace).version_or_default(logger)
    state = compute_state(version)
    if state is SchemaState.TOO_OLD:
        message = (f"Current schema version is {version} whereas minimum required version is {MIN_VERSION}. "
                   f"Recommended version is {LATEST}")
        logger.error(message)
        raise SchemaVersionError(message)
    if state is SchemaState.TOO_RECENT:
        message = (f"Current schema version is {version} whereas the maximum supported version is {MAX_VERSION}. "
                   f"Recommended version is {LATEST}")
        logger.error(message)
        raise SchemaVersionError(message)
    if state is SchemaState.UPGRADABLE:
        logger.warning("Current schema version is %d. Recommended version is %d", version, LATEST)
    else:
        logger.info("Schema version is up-to-date")
    return state


def initialize_schema(config: CassandraConfig, *, session: CassandraSession | None = None,
                      tables: Iterable[Table] = TABLES, types: Iterable[UserType] = TYPES,
                      logger: logging.Logger = LOGGER) -> SchemaState:
    """Create what is missing; a keyspace created entirely by this call is at the latest version (James)."""
    own = session is None
    s = CassandraSession.connect(config, use_keyspace=False) if session is None else session
    try:
        result = create_schema(s.session, config, tables, types)
        if result.fresh_keyspace:
            SchemaVersionDAO(s, config.keyspace).update_version(LATEST)
        return startup_check(s, logger, keyspace=config.keyspace)
    finally:
        if own:
            s.close()
