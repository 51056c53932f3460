"""``/cassandra/version`` on a keyspace of its own: the upgrade runs as a task through the Cassandra store."""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Iterator

import pytest

from mailserver.cassandra.schema import TABLES_BY_NAME, TYPES, create_schema
from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import LATEST, SchemaVersionDAO
from mailserver.tasks.wiring import TaskSettings, cassandra_services
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, make_context

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration

TABLES = ("schemaVersion", "taskExecutions", "taskSchedule", "eventStore", "taskExecutionDetailsProjection",
          "quotaLimit", "quotaCurrentValue")


@pytest.fixture
def session(cassandra_config, unique) -> Iterator[CassandraSession]:
    """A keyspace at version 14 with just what the 14 -> 15 migration and the tasks need."""
    config = dataclasses.replace(cassandra_config, keyspace=f"upgrade_{unique}")
    bootstrap = CassandraSession.connect(config, use_keyspace=False)
    try:
        create_schema(bootstrap.session, config, [TABLES_BY_NAME[t.lower()] for t in TABLES], TYPES)
        with CassandraSession.connect(config) as session:
            SchemaVersionDAO(session).update_version(LATEST - 1)
            yield session
    finally:
        bootstrap.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=120)
        bootstrap.close()


def test_upgrade_to_latest_through_webadmin(session):
    services = cassandra_services(session, TaskSettings("node-a", poll_interval=0.1, heartbeat_interval=0.2))
    client = TestClient(create_app(make_context(tasks=services.manager, schema_versions=services.schema_versions)),
                        headers={"Password": FULL}, raise_server_exceptions=False)
    with services.worker:
        assert client.get("/cassandra/version").json() == {"version": LATEST - 1}
        assert client.get("/cassandra/version/latest").json() == {"version": LATEST}
        response = client.post("/cassandra/version/upgrade/latest")
        assert response.status_code == 201
        report = client.get(f"/tasks/{response.json()['taskId']}/await?timeout=60").json()
    assert (report["type"], report["status"]) == ("cassandra-migration", "completed"), report
    assert report["additionalInformation"]["toVersion"] == LATEST
    assert client.get("/cassandra/version").json() == {"version": LATEST}
