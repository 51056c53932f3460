"""What a job needs beyond ``local[*]``: executors sized from the Spark connection, and a Python for them.

On ``local[*]`` the executors live in the driver's JVM and their Python workers inherit the
driver's interpreter and environment. On a cluster master (``spark://``, ``k8s://``, ``yarn``) they
run elsewhere and see only what the submit ships: the ``--py-files`` zip and the ``--jars`` (both
added by :class:`SparkJobOperator`) and the Python named here. The Spark connection's extras say
how big the executors are and which Python they run:

``executor_memory``, ``executor_cores``, ``total_executor_cores``, ``num_executors``
    spark-submit's sizes (``num_executors`` for YARN and Kubernetes).
``pyspark_python``
    the executors' interpreter: a path that exists on every worker node (an image's Python on
    Kubernetes). Default: the interpreter that runs the task, right for workers that share this
    machine's environment (the stack's own cluster).
``python_archive``
    a packed environment shipped with the job (``venv-pack``/``conda-pack`` output, a path or
    URL the cluster can read); the executors then run ``./environment/bin/python`` from it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

# Connection extra -> the Spark property spark-submit's option of the same meaning sets.
SIZE_EXTRAS = {"executor_memory": "spark.executor.memory", "executor_cores": "spark.executor.cores",
               "total_executor_cores": "spark.cores.max", "num_executors": "spark.executor.instances"}
ARCHIVE_ALIAS = "environment"


def is_local(master: str) -> bool:
    return master.startswith("local")


def cluster_conf(master: str, extra: Mapping[str, Any], driver_python: str = sys.executable) -> dict[str, str]:
    """Spark properties for a job submitted to ``master`` (a Spark connection's host) with these extras."""
    conf = {prop: str(extra[key]) for key, prop in SIZE_EXTRAS.items() if extra.get(key) not in (None, "")}
    if is_local(master):
        return conf
    conf["spark.pyspark.driver.python"] = driver_python
    if extra.get("python_archive"):
        conf["spark.archives"] = f"{extra['python_archive']}#{ARCHIVE_ALIAS}"
        conf["spark.pyspark.python"] = f"./{ARCHIVE_ALIAS}/bin/python"
    else:
        conf["spark.pyspark.python"] = str(extra.get("pyspark_python") or driver_python)
    return conf
