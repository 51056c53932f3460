"""Build the SparkSession of a job: Cassandra connector wired, same code on local[*] or a cluster.

Under spark-submit the master and the jars come from the command line (the Airflow operator
adds them); when a job is started with plain ``python`` (tests, a laptop), the builder adds
the connector jars listed in ``SPARK_CONNECTOR_JARS`` and defaults the master to ``local[*]``.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CASSANDRA_EXTENSIONS = "com.datastax.spark.connector.CassandraSparkExtensions"


def cassandra_conf(settings: JobSettings) -> dict[str, str]:
    return {
        "spark.sql.extensions": CASSANDRA_EXTENSIONS,
        "spark.cassandra.connection.host": settings.cassandra_hosts,
        "spark.cassandra.connection.port": str(settings.cassandra_port),
        # Repairs must read what was written: LOCAL_QUORUM both ways, as James does.
        "spark.cassandra.input.consistency.level": "LOCAL_QUORUM",
        "spark.cassandra.output.consistency.level": "LOCAL_QUORUM",
    }


def _launched_by_spark_submit() -> bool:
    return "SPARK_SUBMIT" in os.environ or os.environ.get("PYSPARK_GATEWAY_PORT") is not None


def build_session(app_name: str, settings: JobSettings, extra_conf: dict[str, str] | None = None) -> SparkSession:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if settings.master:
        builder = builder.master(settings.master)
    elif not _launched_by_spark_submit():
        builder = builder.master("local[*]")
    jars = os.environ.get("SPARK_CONNECTOR_JARS", "")
    conf = {
        "spark.ui.enabled": "false",  # 4040 clashes between concurrent jobs on one host
        # Connector splits prefer the Cassandra host; in local mode (or when executors are not on the
        # Cassandra nodes) waiting for that locality stalled stages mixing them with cached blocks.
        "spark.locality.wait": "0s",
        "spark.sql.shuffle.partitions": os.environ.get("SPARK_SHUFFLE_PARTITIONS", "4"),
        **cassandra_conf(settings),
        **(extra_conf or {}),
    }
    if not _launched_by_spark_submit():
        if jars:
            conf["spark.jars"] = jars
        # Python workers default to `python3` on PATH, which may not be this interpreter (its venv).
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    for key, value in conf.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
