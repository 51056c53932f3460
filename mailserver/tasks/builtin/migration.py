"""Cassandra schema upgrades as a task (James's ``cassandra-migration``, info ``{"toVersion": N}``).

``SchemaVersions`` is what WebAdmin's ``/cassandra/version`` routes and the task need: the
current and latest versions, whether an upgrade can be planned, and the upgrade itself, which
is ``mailserver schema upgrade``'s ``migrate`` (idempotent steps, version bumped after each).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mailserver.cassandra.migrations.runner import (
    MIGRATIONS,
    MigrationError,
    MigrationFactory,
    MigrationPartial,
    migrate,
)
from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import LATEST, SchemaVersionDAO
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskFactory, TaskRegistry

log = logging.getLogger(__name__)


class SchemaVersions:
    def __init__(self, session: CassandraSession, migrations: Mapping[int, MigrationFactory] = MIGRATIONS,
                 latest: int = LATEST) -> None:
        self.session = session
        self.migrations = migrations
        self.latest = latest

    def current(self) -> int | None:
        """The stored version; None when the keyspace has no version row."""
        return SchemaVersionDAO(self.session).current_version()

    def missing_steps(self, target: int) -> list[int]:
        """Versions between the current one and ``target`` no migration leads to (empty: plannable)."""
        start = SchemaVersionDAO(self.session).version_or_default(log)
        return [v for v in range(start + 1, target + 1) if v not in self.migrations]

    def upgrade(self, target: int) -> None:
        """Raises MigrationError (cannot plan) or MigrationPartial (a step did not complete)."""
        migrate(self.session, target, log, self.migrations)


class CassandraMigrationTask(Task):
    type = "cassandra-migration"

    def __init__(self, versions: SchemaVersions, to_version: int) -> None:
        self.versions = versions
        self.to_version = to_version

    def run(self) -> Result:
        try:
            self.versions.upgrade(self.to_version)   # at or above the target already: nothing to do
        except (MigrationError, MigrationPartial) as exc:
            log.error("Cassandra migration to version %d failed: %s", self.to_version, exc)
            return Result.FAILED
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"toVersion": self.to_version}

    def additional_information(self) -> dict[str, Any]:
        return {"toVersion": self.to_version}


def factory(versions: SchemaVersions) -> TaskFactory:
    return lambda p: CassandraMigrationTask(versions, int(p["toVersion"]))


def register(registry: TaskRegistry, versions: SchemaVersions) -> None:
    registry.register(CassandraMigrationTask.type, factory(versions))
