"""A Cassandra keyspace of one's own: created with the schema (or part of it), dropped at the end."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.schema import TABLES, TYPES, Table, UserType, create_schema
from mailserver.cassandra.session import CassandraSession


@contextmanager
def scratch_keyspace(config: CassandraConfig, tables: Iterable[Table] = TABLES,
                     types: Iterable[UserType] = TYPES) -> Iterator[CassandraSession]:
    """A session on ``config.keyspace``, created with ``tables`` and ``types`` and dropped when the block ends."""
    bootstrap = CassandraSession.connect(config, use_keyspace=False)
    try:
        create_schema(bootstrap.session, config, tables, types)
    finally:
        bootstrap.close()
    session = CassandraSession.connect(config)
    try:
        yield session
    finally:
        # Generous: schema changes wait for every node, and a test may have just restarted Cassandra.
        session.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=120)
        session.close()
