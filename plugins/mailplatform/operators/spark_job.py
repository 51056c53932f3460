"""Run one of the platform's PySpark jobs through spark-submit, wired from Airflow connections.

DAGs say *which* job and *what* arguments; this operator adds, at run time only:
the application file, the ``spark_apps`` zip as ``--py-files``, the connector jars
(``SPARK_CONNECTOR_JARS``), the Cassandra contact points from ``cassandra_default`` and the
S3 / OpenSearch endpoints as environment variables (secrets never appear on the command line).
``args_from_context`` turns the run's context (validated params, run id, who triggered it) into
job arguments at run time, for what Jinja cannot express (a flag present or absent, a repeated
option). With a ``maintenance_window`` the task switches maintenance mode on just before the
job and off just after it (never for a dry run): see ``maintenance_window.py``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from airflow.exceptions import AirflowNotFoundException
from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseHook

from mailplatform.operators.maintenance_window import MaintenanceWindow
from mailplatform.operators.spark_cluster import cluster_conf
from spark_apps.packaging import build_py_files, job_path

# S3 connection extra -> the job's environment: the server's blob settings (mailserver/blob/config.py).
BLOB_STORE_EXTRA = {"blob_deduplication": "MAILSERVER_BLOB_DEDUPLICATION",
                    "blob_generation_family": "MAILSERVER_BLOB_GENERATION_FAMILY",
                    "blob_generation_duration": "MAILSERVER_BLOB_GENERATION_DURATION"}


SPARK_LOG4J2_ENV = "MAILPLATFORM_SPARK_LOG4J2"
DEFAULT_SPARK_LOG4J2 = Path(__file__).resolve().parents[3] / "include" / "spark" / "log4j2.properties"


def spark_log_conf() -> dict[str, str]:
    """Spark's own logging at WARN in the task log (``include/spark/log4j2.properties``, or the file
    ``MAILPLATFORM_SPARK_LOG4J2`` names): the platform's progress and summary stay readable."""
    path = Path(os.environ.get(SPARK_LOG4J2_ENV) or DEFAULT_SPARK_LOG4J2)
    return {"spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{path}",
            # Once the context is up (and for executors' log lines relayed to the driver) as well.
            "spark.log.level": "WARN"}


class SparkJobOperator(SparkSubmitOperator):
    # The Cassandra connection may come from a param ("{{ params.cassandra_conn_id }}").
    template_fields = (*SparkSubmitOperator.template_fields, "cassandra_conn_id")
    ui_color = "#f4a460"

    def __init__(
        self,
        *,
        job: str,
        job_args: Sequence[str] = (),
        spark_conn_id: str = "spark_default",
        cassandra_conn_id: str = "cassandra_default",
        s3_conn_id: str | None = "s3_default",
        opensearch_conn_id: str | None = "opensearch_default",
        driver_memory: str = "1g",
        args_from_context: Callable[[Mapping[str, Any]], list[str]] | None = None,
        maintenance_window: MaintenanceWindow | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            application=str(job_path(job)),
            application_args=list(job_args),
            conn_id=spark_conn_id,
            name=f"mailplatform-{job}",
            driver_memory=driver_memory,
            **kwargs,
        )
        self.job = job
        self.spark_conn_id = spark_conn_id
        self.cassandra_conn_id = cassandra_conn_id
        self.s3_conn_id = s3_conn_id
        self.opensearch_conn_id = opensearch_conn_id
        self.args_from_context = args_from_context
        self.maintenance_window = maintenance_window

    def connection_settings(self) -> tuple[dict[str, str], list[str], dict[str, str]]:
        """The Spark conf, job arguments and environment the task's Airflow connections give the job."""
        conf: dict[str, str] = {"spark.ui.enabled": "false", **spark_log_conf()}
        args: list[str] = []
        env: dict[str, str] = {}
        cass = BaseHook.get_connection(self.cassandra_conn_id)
        args += ["--cassandra-hosts", cass.host or "127.0.0.1", "--cassandra-port", str(cass.port or 9042)]
        if cass.schema:
            args += ["--keyspace", cass.schema]
        if self.s3_conn_id:
            s3 = BaseHook.get_connection(self.s3_conn_id)
            extra = s3.extra_dejson
            env.update({"S3_ENDPOINT": extra.get("endpoint_url", ""), "S3_ACCESS_KEY": s3.login or "",
                        "S3_SECRET_KEY": s3.password or "", "S3_REGION": extra.get("region_name", "us-east-1")})
            # The server's blob ids and deletes (include/connections.py blob_store_extra).
            env.update({var: str(extra[key]) for key, var in BLOB_STORE_EXTRA.items() if key in extra})
        if self.opensearch_conn_id:
            osc = BaseHook.get_connection(self.opensearch_conn_id)
            env["OPENSEARCH_URL"] = f"{osc.schema or 'http'}://{osc.host}:{osc.port or 9200}"
        return conf, args, env

    def execute(self, context: Any) -> None:
        conf, conn_args, env = self.connection_settings()
        self.conf = {**conf, **(self.conf or {})}
        # Explicit job arguments come last so a DAG can still override a connection default.
        from_context = self.args_from_context(context) if self.args_from_context else []
        self.application_args = [*conn_args, *from_context, *(self.application_args or [])]
        self.env_vars = {**env, **(self.env_vars or {})}
        jars = os.environ.get("SPARK_CONNECTOR_JARS", "")
        if jars:
            self.jars = ",".join(filter(None, [jars, self.jars or ""]))
        self._apply_cluster_settings()
        with tempfile.TemporaryDirectory(prefix="spark-job-") as tmp:
            self.py_files = str(build_py_files(Path(tmp)))
            with self._maintenance(context):
                super().execute(context)

    def _apply_cluster_settings(self) -> None:
        try:
            spark = BaseHook.get_connection(self.spark_conn_id)
        except AirflowNotFoundException:
            return   # spark-submit's hook reports the missing connection in its own words
        # A DAG's own conf wins over what the connection says.
        self.conf = {**cluster_conf(spark.host or "local[*]", spark.extra_dejson), **(self.conf or {})}

    def _maintenance(self, context: Any) -> AbstractContextManager[Any]:
        # Entered here, in the running task: the task already holds its pool slot.
        return self.maintenance_window.held(context, self.log) if self.maintenance_window else nullcontext()
