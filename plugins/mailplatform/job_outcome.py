"""The ``report`` leaf of a procedure when its job never ran: a red run that says why.

``report`` runs after the job whether it succeeded or failed (``trigger_rule="all_done"``). With
``one_done``, a run refused by ``check_params`` (or stopped by a health gate) skipped ``report``,
and Airflow judged a run whose leaves are all skipped *successful*: a refused purge showed green.
So ``report`` runs in every case and, when the job never started, fails at once with the cause:
the refusal ``check_params`` recorded, or the task that failed first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk.exceptions import AirflowFailException

REFUSAL_KEY = "refusal"          # the XCom check_params pushes before failing: "param slices: ..."
RAN = ("success", "failed")      # a job in these states has run (a failed job may still have a report)


def never_ran_cause(states: Mapping[str, Any], job_task_id: str, refusal: str | None,
                    order: list[str]) -> str | None:
    """Why ``job_task_id`` never ran (None: it ran). ``order``: the DAG's task ids, upstream first."""
    if states.get(job_task_id) in RAN:
        return None
    if refusal:
        return f"refused by check_params, nothing ran: {refusal}"
    failed = [task_id for task_id in order if states.get(task_id) == "failed"]
    if failed:
        return f"{job_task_id} never ran: {failed[0]} failed first, see its log"
    return f"{job_task_id} never ran (its state: {states.get(job_task_id)}); see the upstream tasks' logs"


def fail_when_job_never_ran(context: Mapping[str, Any], job_task_id: str) -> None:
    """Raise ``AirflowFailException`` (no retry: a retry cannot run the job) when the job never ran."""
    from mailplatform.param_checks import TASK_ID

    ti = context["ti"]
    states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[ti.run_id]).get(ti.run_id, {})
    if states.get(job_task_id) in RAN:
        return
    refusal = ti.xcom_pull(task_ids=TASK_ID, key=REFUSAL_KEY) if states.get(TASK_ID) == "failed" else None
    order = [task.task_id for task in context["dag"].topological_sort()]
    cause = never_ran_cause(states, job_task_id, refusal, order)
    if cause is not None:
        raise AirflowFailException(cause)
