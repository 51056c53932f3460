"""A task's log out of what ``dag.test()`` printed, and a DAG run's note as the UI shows it.

``dag.test()`` runs each task in the calling process and writes no log file: the task's log is
what was printed between the ``[DAG TEST] starting task_id=<id>`` and ``[DAG TEST] end task
task_id=<id>`` lines (its last try's, when it ran more than once). Airflow's logging keeps the
stdout it found when first configured (pytest's capture, in a test session), so the run is made
in a process of its own whose output is read whole (``printed_dag_test``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

RESULT_PREFIX = "DAG TEST RESULT "
RUN_AND_PRINT = (
    "import json, sys\n"
    "from tests.e2e.maintenance.conftest import run_dag\n"
    "run, states, summary = run_dag(sys.argv[1], json.loads(sys.argv[2]))\n"
    f"print({RESULT_PREFIX!r} + json.dumps({{'run_id': run.run_id, 'state': run.state, 'states': states, "
    "'summary': summary}, default=str), flush=True)\n"
)


def printed_dag_test(dag_id: str, conf: dict[str, Any], *, timeout: float = 1800) -> tuple[str, dict[str, Any]]:
    """``run_dag`` in a child process (this process's environment: connections, Airflow home): what it
    printed, and the run's id, state, task states and report summary."""
    result = subprocess.run([sys.executable, "-c", RUN_AND_PRINT, dag_id, json.dumps(conf)], capture_output=True,
                            text=True, env=dict(os.environ), timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert result.returncode == 0 and lines, f"dag.test() of {dag_id} failed:\n{result.stdout[-5000:]}" \
                                             f"\n{result.stderr[-5000:]}"
    return result.stdout, json.loads(lines[-1][len(RESULT_PREFIX):])


def task_log(output: str, task_id: str) -> list[str]:
    lines = output.splitlines()
    start = re.compile(rf"\[DAG TEST\] starting task_id={re.escape(task_id)}\b")
    end = re.compile(rf"\[DAG TEST\] end task task_id={re.escape(task_id)}\b")
    starts = [i for i, line in enumerate(lines) if start.search(line)]
    assert starts, f"no log of {task_id} in the output"
    first = starts[-1] + 1
    last = next((i for i in range(first, len(lines)) if end.search(lines[i])), len(lines))
    return lines[first:last]


def run_note(dag_id: str, run_id: str) -> str | None:
    """The run's note, read from Airflow's database as the UI and the REST API read it."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        run: Any = session.scalar(select(DagRun).where(DagRun.dag_id == dag_id, DagRun.run_id == run_id))
        assert run is not None, f"no run {run_id} of {dag_id}"
        return run.note
