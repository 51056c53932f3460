"""The 10 -> 11 migration as a real Airflow backfill, run by the stack's scheduler.

What an operator does on a large keyspace at version 10 (the DAG's doc, step 3 and 4): a backfill
through Airflow's REST API (the UI's Backfill tab and ``airflow backfill create`` call the same
endpoint), here over the first two of the keyspace's three months, ``max_active_runs`` 1, each
backfill run migrating the messages of its month; then one manual run that migrates what is left
(the third month), checks every date and bumps the version to the latest. The keyspace is this
test's own, named by an Airflow connection created through the API and chosen with the DAG's
``cassandra_conn_id`` param (the stack's Airflow reads ``cassandra_default`` from its environment).
Everything is checked with CQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from mailserver.cassandra.session import CassandraSession
from mailserver.cassandra.versions import LATEST
from tests.support.airflow_stack import api, unpause
from tests.support.cassandra_migration import (
    MONTHS,
    V10Data,
    all_complete,
    incomplete_by_month,
    v10_keyspace,
    versions,
)

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.timeout(3600)]

DAG = "cassandra_schema_migration"
RUN_TIMEOUT = 1800.0


@pytest.fixture
def v10(cassandra_config, unique) -> Iterator[tuple[CassandraSession, V10Data]]:
    with v10_keyspace(cassandra_config, f"v10backfill_{unique}") as (session, data):
        yield session, data


@pytest.fixture
def migration_api(airflow_settings, v10, unique) -> Iterator[tuple[httpx.Client, str]]:
    """An API client, and the id of a connection naming the v10 keyspace (deleted afterwards)."""
    session, _ = v10
    conn_id = f"cassandra_v10_{unique}"
    config = session.config
    with api(airflow_settings) as client:
        created = client.post("/api/v2/connections", json={
            "connection_id": conn_id, "conn_type": "generic", "host": ",".join(config.hosts),
            "port": config.port, "schema": session.keyspace})
        assert created.status_code == 201, created.text
        was_paused = client.get(f"/api/v2/dags/{DAG}").json()["is_paused"]
        unpause(airflow_settings, DAG)   # backfill runs of a paused DAG wait
        try:
            yield client, conn_id
        finally:
            if was_paused:
                client.patch(f"/api/v2/dags/{DAG}", json={"is_paused": True})
            client.delete(f"/api/v2/connections/{conn_id}")


def wait_for(what: str, check: Callable[[], Any], timeout: float = RUN_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"{what}: still not done after {timeout:.0f} s"
        time.sleep(5)


def xcom(client: httpx.Client, run_id: str, task_id: str) -> Any:
    response = client.get(f"/api/v2/dags/{DAG}/dagRuns/{run_id}/taskInstances/{task_id}/xcomEntries/return_value")
    response.raise_for_status()
    value = response.json()["value"]
    return json.loads(value) if isinstance(value, str) else value


def task_states(client: httpx.Client, run_id: str) -> dict[str, str | None]:
    response = client.get(f"/api/v2/dags/{DAG}/dagRuns/{run_id}/taskInstances", params={"limit": 100})
    response.raise_for_status()
    return {ti["task_id"]: ti["state"] for ti in response.json()["task_instances"]}


def test_a_backfill_over_two_months_migrates_each_month_then_a_manual_run_reaches_the_latest_version(
        migration_api, v10):
    client, conn_id = migration_api
    s, data = v10
    before = incomplete_by_month(s)
    months = [f"{start:%Y-%m}" for start, _ in MONTHS]
    assert set(before) == set(months) and versions(s) == [10]

    # The backfill: Jan 1st .. Feb 1st gives one run per month whose interval starts in the range.
    backfilled, left = MONTHS[:2], months[2]
    conf = {"cassandra_conn_id": conn_id, "slices": 2}
    response = client.post("/api/v2/backfills", json={
        "dag_id": DAG, "from_date": MONTHS[0][0].isoformat(), "to_date": MONTHS[1][0].isoformat(),
        # "completed": months already run by an earlier backfill (a stack reused by a second test
        # session, an operator redoing them) are cleared and run again with this run's conf.
        "max_active_runs": 1, "reprocess_behavior": "completed", "dag_run_conf": conf})
    assert response.status_code == 200, response.text
    backfill_id = response.json()["id"]
    wait_for(f"backfill {backfill_id}",
             lambda: client.get(f"/api/v2/backfills/{backfill_id}").json()["completed_at"])

    listed = client.get(f"/api/v2/dags/{DAG}/dagRuns", params={"run_type": "backfill", "limit": 100})
    listed.raise_for_status()
    runs = sorted((r for r in listed.json()["dag_runs"] if r["conf"].get("cassandra_conn_id") == conn_id),
                  key=lambda r: r["logical_date"])
    assert [r["data_interval_start"][:10] for r in runs] == [f"{start:%Y-%m-%d}" for start, _ in backfilled]
    assert [r["data_interval_end"][:10] for r in runs] == [f"{end:%Y-%m-%d}" for _, end in backfilled]
    for run, month in zip(runs, months[:2], strict=True):
        states = task_states(client, run["dag_run_id"])
        assert run["state"] == "success", (run["dag_run_id"], states)
        assert states["migrate_slice"] == "success" and states["denormalize_all"] == "skipped", states
        report = xcom(client, run["dag_run_id"], "slice_report")
        assert report["processed"] == before[month], (month, report)
        assert report["fixed_message_id"] + report["fixed_imap_uid"] == before[month], (month, report)
    assert incomplete_by_month(s) == {left: before[left]}, "each backfilled month was migrated by its run, only"
    assert versions(s) == [10], "backfill runs never bump the version"

    # The final manual run (mode auto = upgrade): the month left for 10 -> 11, then up to the latest.
    response = client.post(f"/api/v2/dags/{DAG}/dagRuns", json={"logical_date": None, "conf": conf})
    assert response.status_code == 200, response.text
    run_id = response.json()["dag_run_id"]

    def finished() -> dict | None:
        run = client.get(f"/api/v2/dags/{DAG}/dagRuns/{run_id}").json()
        return run if run["state"] in ("success", "failed") else None
    run = wait_for(f"run {run_id}", finished)
    assert run["state"] == "success", task_states(client, run_id)
    summary = xcom(client, run_id, "summary")
    assert (summary["fromVersion"], summary["toVersion"], summary["mode"]) == (10, LATEST, "upgrade")
    assert summary["migrations"]["11"]["counters"]["processed"] == before[left]   # the backfill had done the other two
    assert versions(s) == [10, *range(11, LATEST + 1)]
    assert all_complete(s, data)
