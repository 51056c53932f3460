"""The mail-queue and mail-repository DAGs: ``procedure_dag``'s shape, and the Spark operator they share.

    check_params -> backends_healthy -> broker_healthy -> [queue_drained] -> <spark job> -> report
        -> backends_healthy_after

The shape is ``procedure_dag.py``'s, with the broker in the gate and a check after the report:

* ``check_params`` refuses out-of-range and contradictory params (a move without repository, a
  hold without a duration, no filter at all without ``all_mails``) and names that do not exist (the
  queue, the repository) before anything runs (``param_checks.py``): a retry cannot fix them;
* ``backends_healthy``: WebAdmin's Cassandra, RabbitMQ and object-storage checks (never the global
  status: a full queue makes ``MailQueueSize`` degraded, which is why one drains it);
  ``broker_healthy``: the broker of the ``rabbitmq_management`` connection (its vhost exists, no
  memory or disk alarm blocks publishers);
* an optional ``QueueDepthSensor`` gate (``queue_drained``): the target work queue holds at most
  ``max_queue_depth`` messages before more mail is pushed onto it (flush, reprocess);
* the Spark job (``cassandra_maintenance`` pool: it scans and writes James's tables) acts through
  the server's own queue and repository code. ``MailQueueSparkJob`` gives it the broker (``AMQP_URL``,
  ``RABBITMQ_MANAGEMENT_URL`` from the connection, as environment variables, never on the command
  line) and ships the whole ``mailserver`` package with the job (the executors run the server's code);
* ``report`` (``job_report.py``) reads the job's JSON report from S3, prints each step, returns the
  summary as XCom and fails the run unless it COMPLETED (or was a dry run);
* ``backends_healthy_after``: the same health checks once the procedure is done.
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow.sdk import DAG, Param

from mailplatform.health_gate import RABBITMQ_CONN_ID
from mailplatform.operators.spark_job import SparkJobOperator
from mailplatform.param_checks import Rule, from_value_error
from mailplatform.procedure_dag import SparkProcedure, procedure_dag
from mailplatform.run_identity import run_identity_args
from mailplatform.sensors.health import WebAdminHealthSensor
from mailplatform.sensors.queue_depth import QueueDepthSensor
from mailserver.model.james_units import DURATION_PATTERN

BACKENDS = ["Cassandra backend", "RabbitMQ backend", "ObjectStorage"]
WORKQUEUE_PREFIX = "JamesMailQueue-workqueue-"
QUEUE_NAME_PATTERN = r"^[A-Za-z0-9._:@-]{1,180}$"
ADDRESS_PATTERN = r"^(\*@[^@\s]+|[^@\s]+@[^@\s]+)$"
REPOSITORY_URL_PATTERN = r"^[a-z][a-z0-9+.-]*://\S+$"
BUCKET_PATTERN = r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$"

COMMON_PARAMS = {
    "rate": Param(None, type=["null", "number"], exclusiveMinimum=0,
                  description="Mails per second for the whole job; empty for no limit"),
    "blob_bucket": Param(None, type=["null", "string"], pattern=BUCKET_PATTERN,
                         description="Bucket of the mail blobs (empty: the server's default bucket)"),
}
SLICES = Param(8, type="integer", minimum=1, maximum=4096,
               description="Checkpointed units of work: a retried run skips the slices already done")


def filter_params(older_than_means: str) -> dict[str, Param]:
    return {
        "sender": Param(None, type=["null", "string"], pattern=ADDRESS_PATTERN,
                        description="Only mails from this sender (an address, or *@domain for a whole domain)"),
        "recipient": Param(None, type=["null", "string"], pattern=ADDRESS_PATTERN,
                           description="Only mails with this recipient (an address, or *@domain)"),
        "name": Param(None, type=["null", "string"], minLength=1, description="Only the mail with this name"),
        "older_than": Param(None, type=["null", "string"], pattern=DURATION_PATTERN,
                            description=f"Only mails {older_than_means} longer ago than this (30m, 2h, 1d)"),
    }


def filter_args(params: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    for name, option in (("sender", "--sender"), ("recipient", "--recipient"), ("name", "--name"),
                         ("older_than", "--older-than")):
        if params.get(name):
            args += [option, str(params[name])]
    return args


def common_job_args(params: Mapping[str, Any], *, slices: bool = True) -> list[str]:
    args = ["--slices", str(params["slices"])] if slices else []
    if params.get("rate") is not None:
        args += ["--rate", str(params["rate"])]
    if params.get("blob_bucket"):
        args += ["--blob-bucket", params["blob_bucket"]]
    if params.get("dry_run"):
        args.append("--dry-run")
    return args


def build_full_py_files(dest_dir: Path) -> Path:
    """The job's ``--py-files``: the ``spark_apps`` package and the whole ``mailserver`` package (the executors
    act through the server's queue and repository code; only what a job imports is loaded)."""
    from spark_apps.packaging import PACKAGE_DIR, REPO_DIR

    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / "spark_apps_mailserver.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for root in (PACKAGE_DIR, REPO_DIR / "mailserver"):
            for file in sorted(root.rglob("*.py")):
                zf.write(file, file.relative_to(REPO_DIR))
    return target


class MailQueueSparkJob(SparkJobOperator):
    """A Spark job that acts on the mail queues: the broker comes from the ``rabbitmq_management``
    connection (``AMQP_URL`` and ``RABBITMQ_MANAGEMENT_URL`` in the job's environment, resolved at run
    time only) and the whole ``mailserver`` package travels with the job."""

    def __init__(self, *, rabbitmq_conn_id: str = RABBITMQ_CONN_ID, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rabbitmq_conn_id = rabbitmq_conn_id
        self._full_py_files: Path | None = None

    def execute(self, context: Any) -> None:
        from mailplatform.hooks.rabbitmq_management import RabbitMQManagementHook, connection_settings

        hook = RabbitMQManagementHook(self.rabbitmq_conn_id)
        base_url, _auth, _vhost, amqp_url = connection_settings(hook.get_connection(self.rabbitmq_conn_id))
        self.env_vars = {**(self.env_vars or {}), "AMQP_URL": amqp_url, "RABBITMQ_MANAGEMENT_URL": base_url}
        with tempfile.TemporaryDirectory(prefix="mail-queue-job-") as tmp:
            self._full_py_files = build_full_py_files(Path(tmp))
            try:
                super().execute(context)
            finally:
                self._full_py_files = None

    def _get_hook(self) -> Any:
        if self._full_py_files is not None:   # replaces the spark_apps-only zip built by SparkJobOperator
            self.py_files = str(self._full_py_files)
        return super()._get_hook()


@dataclass(frozen=True)
class QueueProcedure:
    dag_id: str
    job: str                                   # module in spark_apps/jobs
    report_type: str                           # the job's report name (its type)
    spark_task_id: str
    description: str
    doc_md: str
    tags: tuple[str, ...]
    params: Mapping[str, Param]
    job_args: Callable[[Mapping[str, Any]], list[str]]
    validate: Callable[[Mapping[str, Any]], None] = lambda params: None
    gate_queue: str | None = None              # Jinja: the mail queue whose work queue must be drained first
    summary: Callable[[Mapping[str, Any]], list[str]] = lambda report: []
    live_checks: Sequence[Rule] = ()           # names that must exist on the server (live.py)
    run_note: bool = True                      # the report has the detect/repair shape (job_report.py)


def queue_dag(procedure: QueueProcedure) -> DAG:
    def job_args(context: Mapping[str, Any]) -> list[str]:
        return [*run_identity_args(context), *procedure.job_args(context["params"])]

    def drained() -> list[Any]:
        if procedure.gate_queue is None:
            return []
        return [QueueDepthSensor(task_id="queue_drained", queue_name=WORKQUEUE_PREFIX + procedure.gate_queue,
                                 max_messages="{{ params.max_queue_depth }}", rabbitmq_conn_id=RABBITMQ_CONN_ID,
                                 poke_interval=30, timeout=60 * 60)]

    def healthy_after() -> list[Any]:
        return [WebAdminHealthSensor(task_id="backends_healthy_after", components=BACKENDS, poke_interval=15,
                                     timeout=10 * 60)]

    return procedure_dag(SparkProcedure(
        dag_id=procedure.dag_id,
        description=procedure.description,
        doc_md=procedure.doc_md,
        tags=("maintenance", "mail-queue", "rabbitmq", "cassandra", *procedure.tags),
        params=procedure.params,
        checks=(from_value_error(procedure.validate),),
        live_checks=procedure.live_checks,
        components=BACKENDS,
        broker=True,
        gates=drained,
        operator=MailQueueSparkJob,
        job=procedure.job,
        job_task_id=procedure.spark_task_id,
        job_args=job_args,
        report_type=procedure.report_type,
        report_lines=procedure.summary,
        run_note=procedure.run_note,
        after=healthy_after,
    ))
