"""The Cassandra repair DAGs: ``procedure_dag``'s shape, with the repairs' params and gate.

A DAG file describes its procedure (``Procedure``: the Spark job, James's task type, the
operator documentation, its own params and how they become job arguments) and calls
``repair_dag``. Every repair then has the same anatomy (``procedure_dag.py``):

    check_params -> backends_healthy -> [maintenance_window] -> detect_repair_verify -> report
        [-> disable_maintenance]

* the gate is WebAdmin's Cassandra and object-storage checks;
* ``dry_run``, ``rate`` and ``slices`` are every repair's params (``COMMON_PARAMS``);
* ``detect_repair_verify`` is the Spark job (detect, repair, verify: ``spark_apps/common/procedure.py``);
* ``report`` fails the run when the repair left something unresolved or failed items (they are
  listed in the log), after putting the summary on the run as its note.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Param

from mailplatform.health_gate import CASSANDRA_COMPONENTS
from mailplatform.operators.maintenance_window import MaintenanceWindow
from mailplatform.param_checks import Rule
from mailplatform.procedure_dag import SparkProcedure, procedure_dag
from mailplatform.run_identity import run_identity_args
from mailplatform.scheduling import Schedule, configured_schedule

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


def common_args(context: Mapping[str, Any], key: str | None = None) -> list[str]:
    params = context["params"]
    args = [*run_identity_args(context, key), "--slices", str(params["slices"])]
    if params.get("rate") is not None:
        args += ["--rate", str(params["rate"])]
    if params.get("dry_run"):
        args.append("--dry-run")
    return args


def repair_dag(procedure: Procedure) -> DAG:
    schedule = configured_schedule(procedure.dag_id, procedure.schedule) if procedure.schedule else None

    def job_args(context: Mapping[str, Any]) -> list[str]:
        return [*common_args(context), *procedure.args_from_params(context["params"])]

    return procedure_dag(SparkProcedure(
        dag_id=procedure.dag_id,
        description=procedure.describe(procedure.description, schedule) if schedule else procedure.description,
        doc_md=procedure.doc_md,
        schedule=schedule.timetable if schedule else None,
        tags=("maintenance", "cassandra", *procedure.tags),
        params={**COMMON_PARAMS, **procedure.params},
        checks=procedure.checks,
        live_checks=procedure.live_checks,
        components=CASSANDRA_COMPONENTS,
        job=procedure.job,
        job_task_id="detect_repair_verify",
        job_args=job_args,
        report_type=procedure.task_type,
        maintenance_window=MaintenanceWindow(procedure.maintenance_max_duration) if procedure.maintenance_mode
        else None,
    ))
