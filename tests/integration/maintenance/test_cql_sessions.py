"""The jobs' cached Cassandra sessions end when asked: a process that runs many jobs (the test process)
stops the driver's threads itself, before interpreter shutdown refuses the work they still submit."""

from __future__ import annotations

import pytest

from spark_apps.common.cql import CqlEndpoint, close_sessions

pytestmark = [pytest.mark.integration]


def test_close_sessions_shuts_the_cached_clusters_down_and_the_next_use_connects_again(stack, cassandra):
    endpoint = CqlEndpoint(stack.cassandra_hosts, stack.cassandra_port, cassandra.keyspace)
    first = endpoint.session()
    assert endpoint.session() is first   # one per endpoint, reused
    assert first.execute("SELECT release_version FROM system.local")

    close_sessions()

    assert first.cluster.is_shutdown
    second = endpoint.session()
    assert second is not first and not second.cluster.is_shutdown
    assert second.execute("SELECT release_version FROM system.local")
