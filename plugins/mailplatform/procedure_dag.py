"""One DAG shape for every Spark procedure, so a new procedure is one small DAG file:

    check_params -> backends_healthy [-> broker_healthy] [-> its own gates] [-> maintenance_window]
        -> <the Spark job> -> report [-> disable_maintenance] [-> its own checks after]

* the start (``health_gate.py``): params checked first, then the health of what the procedure touches;
* optionally a maintenance window (``operators/maintenance_window.py``): ``maintenance_window`` (setup)
  checks WebAdmin, the Spark task switches maintenance mode on once it holds its Cassandra slot (never
  for a dry run), with a deadline the server enforces, and off when its job ends;
  ``disable_maintenance`` (teardown) switches it off again whatever happened, so traffic always resumes;
* the Spark job in the ``cassandra_maintenance`` pool (one slot: two procedures never write Cassandra
  at once). Its run key is the DAG run, so a retry resumes from the job's checkpoints;
* ``report`` (``job_report.py``): the job's report from S3, James's counters as XCom, the run's note;
  it runs once the job ran, failed or not, and fails saying why when it never ran.

A DAG file gives a ``SparkProcedure`` (what differs) to ``procedure_dag``; ``procedures.py`` (the
Cassandra repairs) and ``mail_queues.py`` (the mail-queue procedures) are two families of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, Param

from mailplatform.dag_defaults import dag_arguments
from mailplatform.health_gate import CASSANDRA_COMPONENTS, gated_start
from mailplatform.job_report import ReportType, report_task
from mailplatform.operators.maintenance_window import (
    LeaveMaintenanceOperator,
    MaintenanceWindow,
    MaintenanceWindowOperator,
)
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import Rule, form_params

CASSANDRA_POOL = "cassandra_maintenance"
# Tasks a DAG file adds around the shape; called inside the DAG's ``with`` block, chained in order.
Tasks = Callable[[], Sequence[Any]]


def no_tasks() -> Sequence[Any]:
    return ()


@dataclass(frozen=True)
class SparkProcedure:
    dag_id: str
    description: str
    doc_md: str
    tags: Sequence[str]
    params: Mapping[str, Param]
    job: str                                           # module in spark_apps/jobs
    job_task_id: str                                   # the Spark task
    job_args: Callable[[Mapping[str, Any]], list[str]]  # the run's context -> the job's arguments
    report_type: ReportType                            # the job's report name (James's task type)
    components: Sequence[str] = CASSANDRA_COMPONENTS   # WebAdmin's health checks of the gate
    broker: bool = False                               # the procedure publishes: gate on the broker too
    checks: Sequence[Rule] = ()                        # combinations of params (param_checks.py)
    live_checks: Sequence[Rule] = ()                   # against the live system (live.py)
    schedule: Any = None                               # a timetable; None: on demand only
    operator: type[SparkJobOperator] = SparkJobOperator
    maintenance_window: MaintenanceWindow | None = None
    report_lines: Callable[[Mapping[str, Any]], list[str]] = lambda report: []
    retry_unreadable_report: bool = True
    run_note: bool = True                              # the report has the detect/repair shape
    gates: Tasks = no_tasks                            # more gates, after the health gate
    after: Tasks = no_tasks                            # checks after the report


def procedure_dag(procedure: SparkProcedure) -> DAG:
    params, form_rules = form_params(procedure.params)
    with DAG(
        dag_id=procedure.dag_id,
        description=procedure.description,
        doc_md=procedure.doc_md,
        schedule=procedure.schedule,
        tags=list(procedure.tags),
        params=params,
        **dag_arguments(),
    ) as dag:
        last = gated_start([*form_rules, *procedure.checks], procedure.live_checks,
                           components=procedure.components, broker=procedure.broker)
        for gate in procedure.gates():
            last = last >> gate
        window = procedure.maintenance_window
        spark = procedure.operator(task_id=procedure.job_task_id, job=procedure.job,
                                   args_from_context=procedure.job_args, pool=CASSANDRA_POOL,
                                   retry_delay=timedelta(seconds=30), maintenance_window=window,
                                   execution_timeout=window.max_duration if window else None)
        report = report_task(procedure.report_type, procedure.job_task_id, lines=procedure.report_lines,
                             retry_unreadable=procedure.retry_unreadable_report, run_note=procedure.run_note)
        if window is not None:
            setup = MaintenanceWindowOperator(task_id="maintenance_window", window=window)
            leave = LeaveMaintenanceOperator(task_id="disable_maintenance", window=window)
            last >> setup >> spark >> report >> leave.as_teardown(setups=setup)
        else:
            last >> spark >> report
        last = report
        for check in procedure.after():
            last = last >> check
    return dag
