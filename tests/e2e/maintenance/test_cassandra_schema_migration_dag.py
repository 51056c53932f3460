"""The Cassandra schema migration DAG run by Airflow (``dag.test()``) on a keyspace at version 10.

``airflow backfill create --dry-run`` shows the three monthly runs the DAG's schedule makes (the
backfill itself, each month migrated by its run and a manual run to the latest version, is run by
the stack's scheduler in tests/e2e/airflow_api/test_schema_migration_backfill.py). A dry run
detects what 10 -> 11 would fix and writes nothing, bumps nothing; a run with a target version stops
there; a manual run then takes 11 to the latest (the mail server's own migrations), after which
neither a slice nor an upgrade has anything to do. Everything is checked with CQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from include.connections import airflow_connections
from mailserver.cassandra.versions import LATEST
from tests.e2e.maintenance.conftest import load_dag
from tests.integration.cassandra.test_schema_versions import quota_rows
from tests.support.cassandra_migration import (
    MONTHS,
    all_complete,
    incomplete_by_month,
    incomplete_by_table,
    james_tables,
    v10_keyspace,
    versions,
)
from tests.support.maintenance import table_checksum

pytestmark = [pytest.mark.e2e, pytest.mark.spark,
              pytest.mark.timeout(3600)]  # several Spark runs per test on a shared 2-core host

DAG_ID = "cassandra_schema_migration"
TRANSITIONS = tuple(f"to_{v}" for v in range(11, LATEST + 1))


@pytest.fixture
def v10_airflow(maintenance_airflow, stack, cassandra_config, unique, monkeypatch):
    """A keyspace at version 10 of its own, named by ``cassandra_default`` for this test only."""
    with v10_keyspace(cassandra_config, f"v10dag_{unique}") as (session, data):
        conns = airflow_connections(stack, keyspace=session.keyspace)
        monkeypatch.setenv("AIRFLOW_CONN_CASSANDRA_DEFAULT", conns["AIRFLOW_CONN_CASSANDRA_DEFAULT"])
        yield session, data


def run(**kwargs):
    # A fresh DAG object per run, as a worker would parse it: dag.test() leaves the conf in the params.
    dag_run = load_dag(DAG_ID).test(**kwargs)
    tis = {ti.task_id: ti for ti in dag_run.get_task_instances()}
    return dag_run, {k: ti.state for k, ti in tis.items()}, tis


def backfill_dry_run(start, end) -> str:
    """What ``airflow backfill create`` would create (the CLI of the DAG's doc), without a scheduler."""
    result = subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "backfill", "create", "--dag-id", DAG_ID,
         "--from-date", start.isoformat(), "--to-date", end.isoformat(), "--reprocess-behavior", "completed",
         "--dry-run"], capture_output=True, text=True, env=dict(os.environ), timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def denormalization_report(dag_run) -> dict:
    """The full-range job's report, read with the hook the DAG's tasks use (its run key: run id + ``all``)."""
    from mailplatform.hooks.reports import MaintenanceReportHook
    from mailplatform.schema_migration import DENORMALIZATION_JOB

    return MaintenanceReportHook().read(DENORMALIZATION_JOB, f"{DAG_ID}/{dag_run.run_id}/all")


def test_a_bad_target_is_refused_a_dry_run_writes_nothing_a_target_stops_there_and_an_upgrade_reaches_the_latest(
        v10_airflow):
    s, data = v10_airflow
    # A target past the latest version is refused by the first task, before anything else runs.
    dag_run, states, _ = run(run_conf={"target_version": 16})
    assert states["check_params"] == "failed", states
    assert not [task for task, state in states.items() if state == "success"], states
    assert versions(s) == [10]

    # Every rule of the backfill CLI the doc gives: three monthly runs for Jan 1st .. Mar 1st. (The CLI
    # reads the DAG from Airflow's database, where the dag.test() above has just written it.)
    listed = backfill_dry_run(MONTHS[0][0], MONTHS[2][0])
    assert all(f"{start:%Y-%m-%d}" in listed for start, _ in MONTHS), listed
    assert f"{MONTHS[2][1]:%Y-%m-%d}" not in listed, listed

    # Dry run of the whole upgrade: the Spark step detects, no transition runs, nothing is written.
    tables = james_tables(s)
    before, incomplete = table_checksum(s, *tables), incomplete_by_table(s)
    dag_run, states, tis = run(run_conf={"dry_run": True, "slices": 2})
    assert dag_run.state == "success", states
    assert states["denormalize_all"] == "success" and all(states[t] == "skipped" for t in TRANSITIONS), states
    report = denormalization_report(dag_run)
    assert report["outcome"] == "DRY_RUN"
    assert report["detected"] == {"incompleteMessageIdEntry": incomplete["messageIdTable"],
                                  "incompleteImapUidEntry": incomplete["imapUidTable"]}
    summary = tis["summary"].xcom_pull(task_ids="summary")
    assert (summary["fromVersion"], summary["toVersion"], summary["mode"]) == (10, 10, "upgrade")
    assert table_checksum(s, *tables) == before, "the dry run wrote to the keyspace"
    assert versions(s) == [10]

    dag_run, states, _ = run(run_conf={"target_version": 11, "slices": 2})
    assert dag_run.state == "success", states
    assert states["to_11"] == "success" and all(states[f"to_{v}"] == "skipped" for v in range(12, LATEST + 1))
    assert versions(s) == [10, 11]
    assert incomplete_by_month(s) == {}
    assert json.loads(os.environ["AIRFLOW_CONN_CASSANDRA_DEFAULT"])["schema"] == s.keyspace

    # A manual run (mode auto): 11 -> 12 .. 14 -> 15, the mail server's own migrations, no Spark step.
    dag_run, states, tis = run()
    assert dag_run.state == "success", states
    assert states["denormalize_all"] == "skipped", states
    assert all(states[f"to_{v}"] == "success" for v in range(12, LATEST + 1)), states
    summary = tis["summary"].xcom_pull(task_ids="summary")
    assert (summary["fromVersion"], summary["toVersion"]) == (11, LATEST), summary
    assert versions(s) == [10, *range(11, LATEST + 1)]                 # one bump per completed migration
    assert all_complete(s, data)
    quotas = quota_rows(s)                      # legacy quotas are in the new tables
    assert quotas["current"][("#private&bob@example.com@example.com", "MAILBOX", "count")] == 3
    assert quotas["limits"][("user", "bob@example.com", "SIEVE", "size")] == 2000
    attachments = {r["id"]: r["message_id"] for r in s.execute("SELECT id, message_id FROM attachmentV2")}
    assert attachments["att-1"] == data.base["jan1"]["messageid"]

    # At the latest version: a slice has nothing to do, an upgrade neither.
    dag_run, states, _ = run(logical_date=MONTHS[0][1], run_conf={"mode": "slice"})
    assert dag_run.state == "success" and states["migrate_slice"] == "skipped", states
    dag_run, states, _ = run()
    assert dag_run.state == "success", states
    assert all(states[t] == "skipped" for t in ("denormalize_all", *TRANSITIONS)), states
    assert versions(s) == [10, *range(11, LATEST + 1)]
