"""Run the Spark task of a repair DAG as a worker would, in a process a test can kill.

``python -m tests.support.repair_task_process <dag_id> <run_id>``: the task is taken from the DAG
file as Airflow parses it (its maintenance window and max duration included) and executed with
the DAG's default params; connections come from ``AIRFLOW_CONN_*`` as in a worker.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(dag_id: str, run_id: str) -> None:
    from airflow.dag_processing.dagbag import DagBag

    # Each DAG lives in the file of its id (checked by tests/unit/dags): that file alone is parsed.
    bag = DagBag(dag_folder=str(Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]) / f"{dag_id}.py"))
    dag = bag.get_dag(dag_id)
    if dag is None:
        raise SystemExit(f"no DAG {dag_id}: {bag.import_errors}")
    params = {name: dag.params[name] for name in dag.params}
    context = {"dag": dag, "run_id": run_id, "params": params, "dag_run": None}
    dag.get_task("detect_repair_verify").execute(context)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
