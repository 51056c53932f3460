"""Cassandra answers CQL: create a keyspace, write and read rows, with the real driver."""

from __future__ import annotations

import uuid

import pytest

from tests.support.clients import cassandra_cluster

pytestmark = pytest.mark.integration


def test_create_keyspace_insert_and_select(stack, unique):
    keyspace = f"smoke_{unique}"
    cluster = cassandra_cluster(stack)
    try:
        session = cluster.connect()
        session.execute(f"CREATE KEYSPACE {keyspace} WITH replication = "
                        "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        session.execute(f"CREATE TABLE {keyspace}.mailbox (id timeuuid PRIMARY KEY, name text, uidvalidity bigint)")
        ids = [uuid.uuid1() for _ in range(3)]
        insert = session.prepare(f"INSERT INTO {keyspace}.mailbox (id, name, uidvalidity) VALUES (?, ?, ?)")
        for i, mailbox_id in enumerate(ids):
            session.execute(insert, (mailbox_id, f"INBOX{i}", 1000 + i))

        rows = {r.id: (r.name, r.uidvalidity) for r in session.execute(f"SELECT * FROM {keyspace}.mailbox")}

        assert rows == {ids[i]: (f"INBOX{i}", 1000 + i) for i in range(3)}
        # A lightweight transaction refuses the duplicate: the basis of James's uid allocation.
        applied = session.execute(f"INSERT INTO {keyspace}.mailbox (id, name) VALUES (%s, %s) IF NOT EXISTS",
                                  (ids[0], "other")).one()
        assert applied[0] is False
    finally:
        session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
        cluster.shutdown()
