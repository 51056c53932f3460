"""A fake CassandraSession that holds only the ``schemaVersion`` table, for the version logic without Cassandra."""

from __future__ import annotations


class FakeSchemaSession:
    """Just enough of CassandraSession for the ``schemaVersion`` table."""

    keyspace = "ks"

    def __init__(self, *versions: int) -> None:
        self.versions = list(versions)

    def execute(self, cql: str, params=None, *, strong: bool = False) -> list[dict]:
        if cql.startswith("SELECT value FROM ks.schemaVersion"):
            return [{"value": v} for v in self.versions]
        if cql.startswith("INSERT INTO ks.schemaVersion"):
            self.versions.append(params[1])
            return []
        raise AssertionError(f"unexpected statement {cql}")
