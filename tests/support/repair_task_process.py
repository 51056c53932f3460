"""Run the Spark task of a repair DAG as a worker would, in a process a test can kill.

``python -m tests.support.repair_task_process <dag_id> <run_id>``: the task is taken from the DAG
file as Airflow parses it (its maintenance window and max duration included) and executed with
the DAG's default params; connections come from ``AIRFLOW_CONN_*`` as in a worker.
"""

from __future__ import annotations

import sys

from tests.support.dag_files import parsed_dag


def main(dag_id: str, run_id: str) -> None:
    dag = parsed_dag(dag_id)   # its file alone
    if dag is None:
        raise SystemExit(f"no DAG {dag_id}")
    params = {name: dag.params[name] for name in dag.params}
    context = {"dag": dag, "run_id": run_id, "params": params, "dag_run": None}
    dag.get_task("detect_repair_verify").execute(context)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
