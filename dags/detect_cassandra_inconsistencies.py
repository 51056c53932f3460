"""Daily scan for every Cassandra inconsistency; triggers the repair DAGs that may run unattended."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import pendulum
from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, Param, task
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.procedures import CASSANDRA_COMPONENTS, CASSANDRA_POOL, run_identity_args, run_key
from mailplatform.sensors.health import WebAdminHealthSensor

JOB = "detect-cassandra-inconsistencies"

# Scan name -> the DAG that repairs it (the names are the scan job's, spark_apps/jobs/detect_inconsistencies.py).
REPAIR_DAGS = {
    "messages": "solve_message_inconsistencies",
    "mailboxes": "solve_mailbox_inconsistencies",
    "mappings_sources": "solve_mappings_sources_inconsistencies",
    "mailbox_counters": "recompute_mailbox_counters",
    "current_quotas": "recompute_current_quotas",
    "fast_view": "recompute_fast_view_projection",
}
# Safe with traffic on, so the scan may start them by itself (the guide: "can be run online").
# The others run with the server offline or advised so: the scan reports them, an operator schedules them.
UNATTENDED_BY_DEFAULT = ["fast_view", "mappings_sources", "messages"]

DOC = """
### Detect Cassandra inconsistencies (daily)

**Why.** Cassandra has no transaction across James's denormalized tables: a node timeout
between two writes leaves them apart (mailbox vs path, imapUid vs messageId, counters,
quotas, RRT mapping sources, fast-view previews). The operator guide asks you to run the
repair tasks "regularly"; this DAG is that routine, so nobody has to remember it.

**What it does.**
1. `backends_healthy` waits for Cassandra and the object store.
2. `scan` (Spark, read-only) runs the detection of every repair procedure in one job: the
   same code the repairs use to verify themselves, so the scan and the repairs never disagree.
   It writes nothing to James's tables; the report goes to S3 and the audit table.
3. `summarize` logs, per procedure, what was found (counts by kind and a sample) and decides
   which repairs to start.
4. `trigger_repair` starts one run of each repair DAG that found work **and** is listed in
   `unattended_repairs` (by default only the procedures the guide calls safe online).

**What you do.** Read the `summarize` log or XCom each morning, or alert on it. Procedures
that found work but are not unattended (for example mailbox inconsistencies, which need every
service offline) are listed there with the DAG to run in your next maintenance window.
Set `trigger_repairs` to false for a report-only run. A run writes nothing itself, so it is
safe to start by hand at any time.
"""

with DAG(
    dag_id="detect_cassandra_inconsistencies",
    description="Daily read-only scan of every inconsistency type; triggers the unattended repairs",
    doc_md=DOC,
    schedule="@daily",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["maintenance", "cassandra", "inconsistencies", "scan"],
    default_args={"retries": 1, "retry_delay": timedelta(minutes=2)},
    params={
        "procedures": Param(sorted(REPAIR_DAGS), type="array", uniqueItems=True, minItems=1,
                            items={"type": "string", "enum": sorted(REPAIR_DAGS)},
                            description="Which inconsistency types to scan"),
        "trigger_repairs": Param(True, type="boolean",
                                 description="Start the unattended repair DAGs that found work (false: report only)"),
        "unattended_repairs": Param(UNATTENDED_BY_DEFAULT, type="array", uniqueItems=True,
                                    items={"type": "string", "enum": sorted(REPAIR_DAGS)},
                                    description="Types the scan may repair by itself when it finds work"),
    },
) as dag:
    gate = WebAdminHealthSensor(task_id="backends_healthy", components=list(CASSANDRA_COMPONENTS),
                                deferrable=True, poke_interval=30, timeout=30 * 60)

    def scan_args(context: Mapping[str, Any]) -> list[str]:
        args = run_identity_args(context)
        for name in context["params"]["procedures"]:
            args += ["--procedure", name]
        return args

    scan = SparkJobOperator(task_id="scan", job="detect_inconsistencies", args_from_context=scan_args,
                            pool=CASSANDRA_POOL)

    @task
    def summarize(**context: Any) -> list[str]:
        """Log what was found; return the repair DAGs to start (the XCom of this task)."""
        from mailplatform.hooks.reports import MaintenanceReportHook

        report = MaintenanceReportHook().read(JOB, run_key(context))
        params = context["params"]
        to_trigger: list[str] = []
        for name, result in sorted(report["procedures"].items()):
            if not result["total"]:
                print(f"{name}: consistent ({result['processed']})")
                continue
            print(f"{name}: {result['total']} to fix {result['detected']}; sample: {result['sample'][:5]}")
            if params["trigger_repairs"] and name in params["unattended_repairs"]:
                to_trigger.append(REPAIR_DAGS[name])
            else:
                print(f"  -> not started automatically: run {REPAIR_DAGS[name]} (see its documentation)")
        return to_trigger

    repairs = summarize()
    TriggerDagRunOperator.partial(
        task_id="trigger_repair", wait_for_completion=False, skip_when_already_exists=True,
        conf={"dry_run": False},
    ).expand(trigger_dag_id=repairs)
    gate >> scan >> repairs
