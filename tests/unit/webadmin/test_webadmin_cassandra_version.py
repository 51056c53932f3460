"""``/cassandra/version``: current and latest versions, upgrades as ``cassandra-migration`` tasks."""

from __future__ import annotations

import pytest

from tests.unit.webadmin.task_support import FakeSchemaSession, fake_migration, task_context
from tests.unit.webadmin.webadmin_support import error


@pytest.fixture
def session():
    return FakeSchemaSession(12)


@pytest.fixture
def ran():
    return []


@pytest.fixture
def ctx(session, ran):
    migrations = {v: fake_migration(v, ran) for v in (13, 14)}
    with task_context(session, migrations, latest=14) as context:
        yield context


def await_task(client, response) -> dict:
    assert response.status_code == 201, response.text
    assert response.headers["location"] == f"/tasks/{response.json()['taskId']}"
    return client.get(f"/tasks/{response.json()['taskId']}/await?timeout=30").json()


def test_versions(client, session):
    assert client.get("/cassandra/version").json() == {"version": 12}
    assert client.get("/cassandra/version/latest").json() == {"version": 14}
    session.versions.clear()
    assert client.get("/cassandra/version").json() == {"version": None}


def test_upgrade_to_a_version(client, session, ran):
    report = await_task(client, client.post("/cassandra/version/upgrade", content=b"13"))
    assert (report["type"], report["status"]) == ("cassandra-migration", "completed")
    assert report["additionalInformation"]["toVersion"] == 13
    assert ran == [13] and client.get("/cassandra/version").json() == {"version": 13}


def test_upgrade_to_latest(client, ran):
    report = await_task(client, client.post("/cassandra/version/upgrade/latest"))
    assert report["status"] == "completed" and report["additionalInformation"]["toVersion"] == 14
    assert ran == [13, 14] and client.get("/cassandra/version").json() == {"version": 14}


def test_upgrade_to_an_older_version_changes_nothing(client, session, ran):
    report = await_task(client, client.post("/cassandra/version/upgrade", content=b"11"))
    assert report["status"] == "completed" and ran == [] and session.versions == [12]


def test_upgrade_without_a_migration_path_fails_the_task(client, session):
    report = await_task(client, client.post("/cassandra/version/upgrade", content=b"20"))
    assert report["status"] == "failed" and "failedDate" in report
    assert session.versions == [12]


@pytest.mark.parametrize(("body", "details"), [
    (b"NonInt", "Expecting version to be specified as an integer"),
    (b"", "Expecting version to be specified as an integer"),
    (b"13.5", "Expecting version to be specified as an integer"),
    (b"0", "Version should be strictly positive"),
    (b"-3", "Version should be strictly positive"),
])
def test_upgrade_errors(client, ctx, body, details):
    response = error(client.post("/cassandra/version/upgrade", content=body))
    assert response == {"statusCode": 400, "type": "InvalidArgument",
                        "message": "Invalid arguments supplied in the user request", "details": details}
    assert ctx.tasks.list() == []


def test_upgrade_to_latest_that_cannot_be_planned_is_409(client, session):
    session.versions[:] = [3]   # no migration from 3 to 14
    body = error(client.post("/cassandra/version/upgrade/latest"))
    assert (body["statusCode"], body["type"], body["message"]) == (
        409, "WrongState", "The migration requested can not be performed")
