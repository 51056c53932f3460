"""One shape for every Cassandra repair DAG: health gate -> Spark (detect, repair, verify) -> report.

A DAG file describes its procedure (``Procedure``: the Spark job, James's task type, the
operator documentation, its own params and how they become job arguments) and calls
``repair_dag``. Everything else is the same for all of them, so operators meet one anatomy:

* ``check_params``: every param (bounds, combinations, the user or mailbox exists) before any
  work (``param_checks.py``); a refused run runs nothing else;
* ``backends_healthy``: WebAdmin's health of the components the procedure touches (never the
  global status: dead letters or a full queue make it degraded, and must not block a repair);
* optionally a maintenance window: ``maintenance_window`` (setup) checks WebAdmin, the Spark
  task switches maintenance mode on once it holds its Cassandra slot (never for a dry run), with
  a deadline the server enforces, and off when its job ends; ``disable_maintenance`` (teardown)
  switches it off again whatever happened, so traffic always resumes;
* ``detect_repair_verify``: the Spark job in the ``cassandra_maintenance`` pool (one slot: two
  procedures never write Cassandra at once). Its run key is the DAG run, so a retry resumes
  from the job's checkpoints instead of starting again;
* ``report``: reads the job's report from S3, returns James's counters as XCom, puts its summary
  on the run as a Markdown note (``run_notes.py``), and fails the run when the repair left
  something unresolved or failed items (they are listed in the log).
  It runs once the job ran, failed or not, and is skipped when a refused param or a failed gate
  stopped the run before the job: the first failure shown is the real one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowException

from mailplatform.dag_defaults import dag_arguments
from mailplatform.operators.maintenance_window import (
    LeaveMaintenanceOperator,
    MaintenanceWindow,
    MaintenanceWindowOperator,
)
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import Rule, check_params_task, form_params
from mailplatform.scheduling import Schedule, configured_schedule
from mailplatform.sensors.health import WebAdminHealthSensor

CASSANDRA_POOL = "cassandra_maintenance"
CASSANDRA_COMPONENTS = ("Cassandra backend", "ObjectStorage")
OK_OUTCOMES = ("COMPLETED", "DRY_RUN")
SUMMARY_EXCLUDES = ("fixedInconsistencies", "errors", "detectedItems", "unresolvedItems")
MAX_DURATION_ENV = "MAILPLATFORM_MAINTENANCE_MAX_DURATION_SECONDS"
DEFAULT_MAINTENANCE_MAX_DURATION_SECONDS = 2 * 3600

COMMON_PARAMS = {
    "dry_run": Param(False, type="boolean",
                     description="Detect and report only: nothing is written (the report lists what would be fixed)"),
    "rate": Param(None, type=["null", "number"], exclusiveMinimum=0,
                  description="Repairs per second for the whole job; empty for no limit"),
    "slices": Param(8, type="integer", minimum=1, maximum=4096,
                    description="Checkpointed units of repair work: a retried run skips the slices already done"),
}


def maintenance_max_duration() -> timedelta:
    """``MAILPLATFORM_MAINTENANCE_MAX_DURATION_SECONDS`` (default two hours): read when the DAG is parsed."""
    return timedelta(seconds=int(os.environ.get(MAX_DURATION_ENV, DEFAULT_MAINTENANCE_MAX_DURATION_SECONDS)))


@dataclass(frozen=True)
class Procedure:
    dag_id: str
    job: str                         # module in spark_apps/jobs
    task_type: str                   # James's task type: the report's name
    doc_md: str
    description: str
    tags: tuple[str, ...]
    params: Mapping[str, Param] = field(default_factory=dict)
    args_from_params: Callable[[Mapping[str, Any]], list[str]] = lambda params: []
    maintenance_mode: bool = False
    # Longest a run may keep the cluster in maintenance mode: the server leaves it by itself then,
    # and the Spark task is stopped (its execution timeout), so a repair never outlives its window.
    maintenance_max_duration: timedelta = field(default_factory=maintenance_max_duration)
    schedule: str | None = None     # the shipped cron, off unless enabled (scheduling.py)
    checks: Sequence[Rule] = ()      # combinations of params (param_checks.py)
    live_checks: Sequence[Rule] = ()  # against the live system (live.py)
    # The DAG list's description once the schedule is known (default: the description and the schedule).
    describe: Callable[[str, Schedule], str] = lambda description, schedule: f"{description}; {schedule.sentence()}"


def run_key(context: Mapping[str, Any]) -> str:
    return f"{context['dag'].dag_id}/{context['run_id']}"


def run_identity_args(context: Mapping[str, Any], key: str | None = None) -> list[str]:
    """Which run this is and who asked for it: the job's run key (checkpoints, report; the DAG run's
    unless ``key`` says otherwise) and audit fields."""
    dag_run = context.get("dag_run")
    who = getattr(dag_run, "triggering_user_name", None) or "scheduler"
    return ["--run-key", key or run_key(context), "--dag-id", context["dag"].dag_id, "--dag-run-id", context["run_id"],
            "--triggered-by", who]


def common_args(context: Mapping[str, Any], key: str | None = None) -> list[str]:
    params = context["params"]
    args = [*run_identity_args(context, key), "--slices", str(params["slices"])]
    if params.get("rate") is not None:
        args += ["--rate", str(params["rate"])]
    if params.get("dry_run"):
        args.append("--dry-run")
    return args


def summarize(report: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in report.items() if k not in SUMMARY_EXCLUDES}


def check_report(report: Mapping[str, Any]) -> dict[str, Any]:
    """The XCom summary of a report; raises when the run did not converge."""
    summary = summarize(report)
    if report.get("outcome") not in OK_OUTCOMES:
        raise AirflowException(
            f"{report.get('type')} ended {report.get('outcome')}: {report.get('unresolved', 0)} unresolved, "
            f"{len(report.get('errors', []))} failed items (first ones: {report.get('errors', [])[:5]}); "
            "failed items are listed in the report and are fixed by running the DAG again")
    return summary


def repair_dag(procedure: Procedure) -> DAG:
    schedule = configured_schedule(procedure.dag_id, procedure.schedule) if procedure.schedule else None
    params, form_rules = form_params({**COMMON_PARAMS, **procedure.params})
    with DAG(
        dag_id=procedure.dag_id,
        description=procedure.describe(procedure.description, schedule) if schedule else procedure.description,
        doc_md=procedure.doc_md,
        schedule=schedule.timetable if schedule else None,
        tags=["maintenance", "cassandra", *procedure.tags],
        params=params,
        **dag_arguments(),
    ) as dag:
        checked = check_params_task([*form_rules, *procedure.checks], procedure.live_checks)
        gate = WebAdminHealthSensor(task_id="backends_healthy", components=list(CASSANDRA_COMPONENTS),
                                    deferrable=True, poke_interval=30, timeout=30 * 60)

        def job_args(context: Mapping[str, Any]) -> list[str]:
            return [*common_args(context), *procedure.args_from_params(context["params"])]

        window = MaintenanceWindow(procedure.maintenance_max_duration) if procedure.maintenance_mode else None
        spark = SparkJobOperator(task_id="detect_repair_verify", job=procedure.job, args_from_context=job_args,
                                 pool=CASSANDRA_POOL, retry_delay=timedelta(seconds=30), maintenance_window=window,
                                 execution_timeout=window.max_duration if window else None)

        @task(trigger_rule="all_done")   # after the job, failed or not; fails, saying why, when it never ran
        def report(**context: Any) -> dict[str, Any]:
            from mailplatform.hooks.reports import MaintenanceReportHook
            from mailplatform.job_outcome import fail_when_job_never_ran
            from mailplatform.run_notes import push_run_note, report_note
            from spark_apps.common.reports import ReportLocation

            fail_when_job_never_ran(context, "detect_repair_verify")
            try:
                content = MaintenanceReportHook().read(procedure.task_type, run_key(context))
            except Exception as exc:
                raise AirflowException(f"no report for this run ({exc}): the Spark job failed before the end, "
                                       "see the detect_repair_verify log") from exc
            push_run_note(context, report_note(content, ReportLocation.for_run(procedure.task_type,
                                                                               run_key(context)).uri))
            if content.get("outcome") not in OK_OUTCOMES:
                # A failed run still shows its counters and failure lists (WebAdmin's task view, and
                # James's reIndexFailedMessagesOf reads them): the summary is pushed before failing.
                context["ti"].xcom_push(key="return_value", value=summarize(content))
            return check_report(content)

        summary = report()
        if window is not None:
            setup = MaintenanceWindowOperator(task_id="maintenance_window", window=window)
            leave = LeaveMaintenanceOperator(task_id="disable_maintenance", window=window)
            checked >> gate >> setup >> spark >> summary >> leave.as_teardown(setups=setup)
        else:
            checked >> gate >> spark >> summary
    return dag
