"""A task's log out of what ``dag.test()`` printed, and a DAG run's note as the UI shows it.

``dag.test()`` runs each task in the test's process and writes no log file: the task's log is
what was printed between the ``[DAG TEST] starting task_id=<id>`` and ``[DAG TEST] end task
task_id=<id>`` lines (its last try's, when it ran more than once).
"""

from __future__ import annotations

import re
from typing import Any


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
