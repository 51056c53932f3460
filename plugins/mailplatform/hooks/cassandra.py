"""A CQL session from the ``cassandra_default`` Airflow connection (host list, port, keyspace)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from airflow.sdk import BaseHook

from mailserver.cassandra.config import DEFAULT_KEYSPACE

if TYPE_CHECKING:
    from collections.abc import Iterator

    from cassandra.cluster import Session


class CassandraHook(BaseHook):
    conn_name_attr = "cassandra_conn_id"
    default_conn_name = "cassandra_default"
    conn_type = "generic"
    hook_name = "Cassandra (mail platform)"

    def __init__(self, cassandra_conn_id: str = default_conn_name) -> None:
        super().__init__()
        self.cassandra_conn_id = cassandra_conn_id

    def settings(self) -> tuple[list[str], int, str]:
        conn = self.get_connection(self.cassandra_conn_id)
        hosts = [h.strip() for h in (conn.host or "127.0.0.1").split(",") if h.strip()]
        return hosts, int(conn.port or 9042), conn.schema or DEFAULT_KEYSPACE

    @contextmanager
    def session(self, keyspace: str | None = None) -> Iterator[Session]:
        from cassandra.auth import PlainTextAuthProvider
        from cassandra.cluster import Cluster

        conn = self.get_connection(self.cassandra_conn_id)
        hosts, port, default_keyspace = self.settings()
        auth = PlainTextAuthProvider(conn.login, conn.password) if conn.login else None
        cluster = Cluster(hosts, port=port, auth_provider=auth, connect_timeout=10)
        try:
            session = cluster.connect()
            target = keyspace or default_keyspace
            if target in cluster.metadata.keyspaces:  # a DAG may be about to create it
                session.set_keyspace(target)
            yield session
        finally:
            cluster.shutdown()
