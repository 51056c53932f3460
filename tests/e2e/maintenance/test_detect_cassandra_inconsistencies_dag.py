"""The daily scan under ``dag.test()``: it finds what was seeded, writes nothing, and starts the repairs.

What it found per procedure is read from its report the way the DAG's ``summarize`` task reads
it. The repair DAG runs the scan triggers are looked up in Airflow's database (the scheduler would
run them; ``dag.test()`` runs only the scan DAG itself).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.e2e.maintenance.conftest import run_dag
from tests.integration.maintenance.test_message_inconsistencies_job import break_messages
from tests.support.counters_maintenance import counters_from_listing, stored_counters
from tests.support.maintenance import seed_mail, table_checksum

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "detect_cassandra_inconsistencies"
JAMES_TABLES = ("imapUidTable", "messageIdTable", "mailbox", "mailboxPathV3", "mailboxCounters", "rrt",
                "mappings_sources", "quotaCurrentValue", "message_fast_view_projection")


def dag_runs_of(dag_id: str) -> list:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session

    with create_session() as session:
        runs = session.query(DagRun).filter(DagRun.dag_id == dag_id).all()
        return [(r.run_id, r.run_type, dict(r.conf or {})) for r in runs]


def scan_report(run: Any) -> dict[str, Any]:
    """The scan job's report of ``run``: the hook and run key the DAG's ``summarize`` task uses."""
    from mailplatform.hooks.reports import MaintenanceReportHook
    from mailplatform.run_identity import run_key

    from spark_apps.jobs.detect_inconsistencies import JOB

    return MaintenanceReportHook().read(JOB, run_key({"dag": SimpleNamespace(dag_id=run.dag_id), "run_id": run.run_id}))


def sync_dags_to_db() -> None:
    """What the dag-processor does: a DAG can only be triggered once Airflow knows it."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    result = subprocess.run([str(Path(sys.executable).parent / "airflow"), "dags", "reserialize"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


def test_scan_reports_each_type_writes_nothing_and_triggers_the_unattended_repairs(
        maintenance_airflow, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=3, mailboxes_per_user=3, messages_per_mailbox=300)   # 2,700 messages
    added, removed, outdated = 2, 1, 1
    break_messages(session, seeded, added=added, removed=removed, outdated=outdated)
    # The failed writes came before the counter updates (James's write order), so the counters of a
    # mailbox that lost an expunge are wrong as James counts them (the projection's rows the truth
    # has); a lost append is not listed yet, so it is not counted. Counted with CQL.
    stored, listed = stored_counters(session), counters_from_listing(session)
    wrong_counters = sum(stored.get(mailbox, (0, 0)) != value for mailbox, value in listed.items())
    before = table_checksum(session, *JAMES_TABLES)
    sync_dags_to_db()
    # An append whose messageIdTable write failed also never reached the fast-view listener: the
    # scan finds those messages under both procedures, and both repairs may run unattended.
    expected = ["recompute_fast_view_projection", "solve_message_inconsistencies"]
    repairs_before = {dag_id: dag_runs_of(dag_id) for dag_id in expected}

    run, states, _ = run_dag(DAG_ID, {"trigger_repairs": True,
                                      "unattended_repairs": ["fast_view", "mappings_sources", "messages"]})

    assert run.state == "success", states
    found = {name: result["detected"] for name, result in scan_report(run)["procedures"].items()}
    assert found == {
        "messages": {"orphanImapUidEntry": added, "orphanMessageIdEntry": removed, "outdatedMessageIdEntry": outdated},
        # an append whose messageIdTable write failed never reached the fast-view listener
        "fast_view": {"missingFastViewProjection": added},
        "mailbox_counters": {"outdatedMailboxCounters": wrong_counters},
        "mailboxes": {}, "mappings_sources": {}, "current_quotas": {},
    }
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    started = tis["summarize"].xcom_pull(task_ids="summarize")
    assert [r["trigger_dag_id"] for r in started] == expected
    assert table_checksum(session, *JAMES_TABLES) == before, "the scan wrote to James's tables"
    for dag_id in expected:
        triggered = [r for r in dag_runs_of(dag_id) if r not in repairs_before[dag_id]]
        assert len(triggered) == 1, (dag_id, triggered)
        assert triggered[0][2]["dry_run"] is False
    messages = next(r for r in started if r["trigger_dag_id"] == "solve_message_inconsistencies")
    assert messages["conf"]["mailbox_ids"], "the repair is scoped to the mailboxes the scan found"


def test_report_only_scan_triggers_nothing(maintenance_airflow, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=1, mailboxes_per_user=1, messages_per_mailbox=5)
    break_messages(session, seeded, added=1, removed=0, outdated=0)
    sync_dags_to_db()
    repairs_before = dag_runs_of("solve_message_inconsistencies")

    run, states, _ = run_dag(DAG_ID, {"trigger_repairs": False})

    assert run.state == "success", states
    tis = {ti.task_id: ti for ti in run.get_task_instances()}
    assert tis["summarize"].xcom_pull(task_ids="summarize") == []
    assert dag_runs_of("solve_message_inconsistencies") == repairs_before
