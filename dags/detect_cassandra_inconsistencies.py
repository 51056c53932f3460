"""Daily scan for every Cassandra inconsistency; starts only the repairs allowed, scoped to what it found."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from airflow.providers.standard.operators.trigger_dagrun import TriggerDagRunOperator
from airflow.sdk import DAG, Param, task
from mailplatform.dag_defaults import dag_arguments
from mailplatform.health_gate import CASSANDRA_COMPONENTS, gated_start
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import ParamError, form_params, requires
from mailplatform.procedure_dag import CASSANDRA_POOL
from mailplatform.run_identity import run_identity_args, run_key
from mailplatform.scheduling import configured_schedule

DAG_ID = "detect_cassandra_inconsistencies"
JOB = "detect-cassandra-inconsistencies"
SHIPPED_SCHEDULE = "0 2 * * *"
# The repairs the scan may start by itself: none unless the deployment lists them (comma separated
# scan names, e.g. "fast_view,mappings_sources,messages"). Read at parse time: the defaults of the
# params below, so a scheduled run follows it and a manual run shows it in the form.
REPAIRS_ENV = "MAILPLATFORM_SCAN_REPAIRS"

# Scan name -> the DAG that repairs it (the names are the scan job's, spark_apps/jobs/detect_inconsistencies.py).
REPAIR_DAGS = {
    "messages": "solve_message_inconsistencies",
    "mailboxes": "solve_mailbox_inconsistencies",
    "mappings_sources": "solve_mappings_sources_inconsistencies",
    "mailbox_counters": "recompute_mailbox_counters",
    "current_quotas": "recompute_current_quotas",
    "fast_view": "recompute_fast_view_projection",
}
# Safe with traffic on (the guide: "can be run online"): the only ones an operator should list in
# MAILPLATFORM_SCAN_REPAIRS. The others need the server offline: the scan reports them.
SAFE_ONLINE = ["fast_view", "mappings_sources", "messages"]
UNATTENDED_BY_DEFAULT = SAFE_ONLINE   # kept for the scan/job agreement test: a subset of the procedures

DOC = """
### Detect Cassandra inconsistencies (daily)

**Why.** Cassandra has no transaction across James's denormalized tables: a node timeout
between two writes leaves them apart (mailbox vs path, imapUid vs messageId, counters,
quotas, RRT mapping sources, fast-view previews). The operator guide asks you to run the
repair tasks "regularly"; this DAG is that routine once its schedule is enabled
(`MAILPLATFORM_SCHEDULE__DETECT_CASSANDRA_INCONSISTENCIES=on`: every day at 02:00 UTC; it ships off).

**What it does.**
1. `check_params` refuses contradictory params (repairs asked without a type allowed, a type
   allowed that is not scanned) before anything runs.
2. `backends_healthy` waits for Cassandra and the object store.
3. `scan` (Spark, read-only) runs the detection of every repair procedure in one job: the
   same code the repairs use to verify themselves, so the scan and the repairs never disagree.
   It writes nothing to James's tables; the report goes to S3 and the audit table.
4. `summarize` logs, per procedure, what was found (counts by kind and a sample) and decides
   which repairs to start.
5. `trigger_repair` starts one real (not dry-run) run of each repair DAG that found work **and**
   is listed in `unattended_repairs`, **only when `trigger_repairs` is on**. Both default to what
   the deployment sets in `MAILPLATFORM_SCAN_REPAIRS` (comma-separated scan names; empty, the
   shipped default: report only). Each repair is scoped to what the scan found when the scan's
   sample lists every item: the mailboxes (`mailbox_ids`) for messages, the user when a single
   user is concerned (fast view, quotas); otherwise the repair runs over everything, and still
   fixes only what its own detection finds. A repair DAG that is paused keeps its run queued
   until it is unpaused.

**What you do.** Read the `summarize` log or XCom each morning, or alert on it. Procedures
that found work but are not started (for example mailbox inconsistencies, which need every
service offline) are listed there with the DAG to run in your next maintenance window.
A run writes nothing itself, so it is safe to start by hand at any time.
"""


def repairs_allowed(environ: Mapping[str, str] | None = None) -> list[str]:
    """The scan names of ``MAILPLATFORM_SCAN_REPAIRS``; an unknown one is an import error of this DAG."""
    raw = (os.environ if environ is None else environ).get(REPAIRS_ENV, "")
    names = [n.strip() for n in raw.split(",") if n.strip()]
    unknown = sorted(set(names) - set(REPAIR_DAGS))
    if unknown:
        raise ValueError(f"{REPAIRS_ENV}: unknown scan names {unknown} (known: {sorted(REPAIR_DAGS)})")
    return sorted(set(names))


def allowed_are_scanned(params: Mapping[str, Any], _lookups: Any) -> None:
    if not params.get("trigger_repairs"):
        return
    not_scanned = sorted(set(params.get("unattended_repairs") or []) - set(params.get("procedures") or []))
    if not_scanned:
        raise ParamError("unattended_repairs", f"{', '.join(not_scanned)} would never be found: not in procedures")


def scope_of(name: str, result: Mapping[str, Any]) -> dict[str, Any]:
    """The narrowest params of the repair that still cover every item found (empty: the whole keyspace)."""
    sample = result.get("sample") or []
    if len(sample) < result.get("total", 0):   # the sample is cut: the items are not all known
        return {}
    if name == "messages":
        ids = sorted({str(item["mailboxid"]) for item in sample if item.get("mailboxid")})
        return {"mailbox_ids": ids} if ids else {}
    if name in ("fast_view", "current_quotas"):
        users = {item.get("user") for item in sample}
        if len(users) == 1 and None not in users:
            return {"user": users.pop()}
    return {}


ALLOWED = repairs_allowed()
schedule = configured_schedule(DAG_ID, SHIPPED_SCHEDULE)
PARAMS, FORM_RULES = form_params({
    "procedures": Param(sorted(REPAIR_DAGS), type="array", uniqueItems=True, minItems=1,
                        items={"type": "string", "enum": sorted(REPAIR_DAGS)},
                        description="Which inconsistency types to scan"),
    "trigger_repairs": Param(bool(ALLOWED), type="boolean",
                             description=f"Start the repairs of unattended_repairs that found work (default from "
                                         f"{REPAIRS_ENV}; off: report only)"),
    "unattended_repairs": Param(ALLOWED, type="array", uniqueItems=True,
                                items={"type": "string", "enum": sorted(REPAIR_DAGS)},
                                description=f"Types the scan may repair by itself when it finds work (default from "
                                            f"{REPAIRS_ENV}); safe online: {', '.join(SAFE_ONLINE)}"),
})
repairs_sentence = (f"starts the repairs of {', '.join(ALLOWED)} when they find work" if ALLOWED
                    else "report only: starts no repair")

with DAG(
    dag_id=DAG_ID,
    description=f"Read-only scan of every inconsistency type; {repairs_sentence}; {schedule.sentence()}",
    doc_md=DOC,
    schedule=schedule.timetable,
    tags=["maintenance", "cassandra", "inconsistencies", "scan"],
    params=PARAMS,
    **dag_arguments(retry_delay=timedelta(minutes=2)),
) as dag:
    # No report leaf: the scan's findings are the next step's input (summarize), not a run's verdict.
    healthy = gated_start([*FORM_RULES, requires("trigger_repairs", "unattended_repairs",
                                                 what=" (which types may be repaired)"),
                           allowed_are_scanned], components=CASSANDRA_COMPONENTS)

    def scan_args(context: Mapping[str, Any]) -> list[str]:
        args = run_identity_args(context)
        for name in context["params"]["procedures"]:
            args += ["--procedure", name]
        return args

    scan = SparkJobOperator(task_id="scan", job="detect_inconsistencies", args_from_context=scan_args,
                            pool=CASSANDRA_POOL)

    @task
    def summarize(**context: Any) -> list[dict[str, Any]]:
        """Log what was found; return the repair runs to start (``trigger_dag_id`` and ``conf``)."""
        from mailplatform.hooks.reports import MaintenanceReportHook

        report = MaintenanceReportHook().read(JOB, run_key(context))
        params = context["params"]
        to_trigger: list[dict[str, Any]] = []
        for name, result in sorted(report["procedures"].items()):
            if not result["total"]:
                print(f"{name}: consistent ({result['processed']})")
                continue
            print(f"{name}: {result['total']} to fix {result['detected']}; sample: {result['sample'][:5]}")
            if params["trigger_repairs"] and name in params["unattended_repairs"]:
                conf = {"dry_run": False, **scope_of(name, result)}
                to_trigger.append({"trigger_dag_id": REPAIR_DAGS[name], "conf": conf})
                print(f"  -> starting {REPAIR_DAGS[name]} with {conf}")
            else:
                print(f"  -> not started automatically: run {REPAIR_DAGS[name]} (see its documentation)")
        return to_trigger

    repairs = summarize()
    TriggerDagRunOperator.partial(
        task_id="trigger_repair", wait_for_completion=False, skip_when_already_exists=True,
    ).expand_kwargs(repairs)
    healthy >> scan >> repairs
