"""A platform job run inside the test process, on one Spark driver JVM kept for the whole session.

Each ``spark-submit`` starts a JVM, loads Spark and the connector, connects to Cassandra and
compiles its plans cold: about two thirds of a small job's time. The job-level integration tests
check what a job does to the data, so they run its ``__main__`` here instead, as ``spark-submit``
would (its argv, its environment, its exit status, its stdout and stderr), each with a fresh
SparkContext on the JVM the first one started. What only a real ``spark-submit`` shows stays with
it: the shipped ``--py-files`` (every DAG's end-to-end test submits), and a job killed mid-run
(``tests.support.maintenance.spark_submit(wait=False)``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import runpy
import subprocess
import sys
import threading
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

from spark_apps.packaging import job_path

REPO = Path(__file__).resolve().parents[2]
LOG4J = REPO / "include" / "spark" / "log4j2.properties"
# As ``spark_submit`` runs them: two local cores. The JVM takes its options once, when the first job
# starts it: the suite's log4j configuration, and no progress bars on the captured stderr.
MASTER = "local[2]"
GATEWAY_SUBMIT_ARGS = (f"--driver-java-options -Dlog4j2.configurationFile=file:{LOG4J} "
                       "--conf spark.ui.showConsoleProgress=false pyspark-shell")


def run_job(job: str, args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``job`` with ``args`` under ``env`` in this process; what ``subprocess.run`` would return."""
    return run_application(job_path(job), args, env)


def run_application(path: Path, args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the job file ``path`` as ``spark-submit path args`` would, in this process."""
    argv = [str(path), *args]
    if "--master" not in args:
        argv += ["--master", MASTER]
    job_env = {
        **env,
        "PYSPARK_SUBMIT_ARGS": GATEWAY_SUBMIT_ARGS,
        # Python workers import the platform from the repository, as the driver here does.
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
        "PYSPARK_PYTHON": sys.executable,
    }
    # py4j logs its connections' closing at INFO, the last ones from ``__del__`` at interpreter exit,
    # when the handlers logging was given during the session write to closed streams.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    stdout, stderr = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    returncode = 0
    with mock.patch.dict(os.environ, job_env), mock.patch.object(sys, "argv", argv), \
            contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exit_:
            returncode = exit_code(exit_.code)
        except Exception:   # the traceback a failed spark-submit prints, and its status
            traceback.print_exc()
            returncode = 1
        finally:
            # The job's logging.basicConfig must not outlive it (its handler writes to ``stderr`` above).
            for handler in set(root.handlers) - set(handlers):
                root.removeHandler(handler)
            root.setLevel(level)
    return subprocess.CompletedProcess(argv, returncode, stdout.getvalue(), stderr.getvalue())


def exit_code(code: object) -> int:
    """``sys.exit``'s argument as a process status: None is 0, a message is 1."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def execute_in_process(operator: Any, context: Any) -> None:
    """``SparkSubmitOperator.execute`` for a DAG run by ``dag.test()`` here: the operator's job file,
    arguments and environment, as the submit would have them, run by ``run_application``. The job's
    output goes to the task log; a non-zero status fails the task as a failed submit does."""
    from airflow.exceptions import AirflowException

    env = {**os.environ, **(operator.env_vars or {})}
    result = run_application(Path(operator.application), list(operator.application_args or []), env)
    for line in (result.stdout + result.stderr).splitlines():
        operator.log.info("%s", line)
    if result.returncode:
        raise AirflowException(f"{operator.application} (in the test process) ended with status {result.returncode}")


def release_driver() -> None:
    """End what in-process jobs leave for the next one: their Cassandra sessions and the driver JVM.

    Called once when the test session ends. Left to interpreter exit, the Cassandra driver's
    scheduler and reactor threads and py4j's finalizer thread outlive ``concurrent.futures`` and the
    modules they use, and print tracebacks after the pytest summary.
    """
    if "spark_apps.common.cql" in sys.modules:
        from spark_apps.common.cql import close_sessions

        close_sessions()
    if "pyspark" in sys.modules:
        stop_gateway()


def stop_gateway(timeout: float = 30.0) -> None:
    """Stop the SparkContext still active (if any), py4j's client and callback server, and the JVM."""
    from py4j.clientserver import FinalizerWorker  # type: ignore[import-untyped]
    from pyspark import SparkContext

    with SparkContext._lock:
        active, gateway = SparkContext._active_spark_context, SparkContext._gateway
    if active is not None:
        active.stop()
    if gateway is None:
        return
    gateway.shutdown()   # also ends py4j's finalizer worker thread
    proc = getattr(gateway, "proc", None)   # the spark-submit JVM: it exits when its stdin closes
    if proc is not None:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    SparkContext._gateway = None
    SparkContext._jvm = None
    # py4j's finalizer worker sees the shutdown on its next poll (a second at most): let it end now.
    for thread in threading.enumerate():
        if isinstance(thread, FinalizerWorker):
            thread.join(timeout)
