"""spark-submit runs a PySpark job that reads Cassandra through the connector and writes back."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from spark_apps.packaging import build_py_files, job_path
from tests.support.clients import cassandra_cluster

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def smoke_keyspace(stack, unique):
    keyspace = f"spark_smoke_{unique}"
    cluster = cassandra_cluster(stack)
    session = cluster.connect()
    session.execute(f"CREATE KEYSPACE {keyspace} WITH replication = "
                    "{'class': 'SimpleStrategy', 'replication_factor': 1}")
    session.execute(f"CREATE TABLE {keyspace}.smoke_messages "
                    "(user text, message_id timeuuid, size bigint, PRIMARY KEY (user, message_id))")
    session.execute(f"CREATE TABLE {keyspace}.smoke_totals "
                    "(user text PRIMARY KEY, message_count bigint, total_size bigint)")
    yield keyspace, session
    session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}")
    cluster.shutdown()


def test_spark_submit_reads_cassandra_and_writes_result_table(stack, spark_env, smoke_keyspace):
    keyspace, session = smoke_keyspace
    insert = session.prepare(f"INSERT INTO {keyspace}.smoke_messages (user, message_id, size) VALUES (?, now(), ?)")
    for size in (10, 20, 30):
        session.execute(insert, ("alice@example.com", size))
    session.execute(insert, ("bob@example.com", 7))

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [
            str(Path(sys.executable).parent / "spark-submit"), "--master", "local[2]",
            "--driver-memory", "1g", "--conf", "spark.ui.enabled=false",
            "--jars", spark_env["SPARK_CONNECTOR_JARS"],
            "--py-files", str(build_py_files(Path(tmp))),
            str(job_path("stack_smoke")),
            "--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", keyspace,
        ]
        result = subprocess.run(cmd, env=spark_env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert 'REPORT {"users": 2, "messages": 4}' in result.stdout

    totals = {r.user: (r.message_count, r.total_size)
              for r in session.execute(f"SELECT * FROM {keyspace}.smoke_totals")}
    assert totals == {"alice@example.com": (3, 60), "bob@example.com": (1, 7)}
