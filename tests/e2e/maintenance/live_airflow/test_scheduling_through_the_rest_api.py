"""What a real scheduler does with the DAGs as shipped, through Airflow's REST API on the stack's
Airflow (``live_airflow``): unpausing starts nothing, and a refused trigger creates no run (nor does
the unpausing the trigger form does with it). The schedules an operator enables are in
``tests/e2e/maintenance/enabled_schedules`` (they need a scheduler started with other settings).

"Nothing started" is asserted once the scheduler has made full passes after the unpausing: its loop
heartbeats between two passes (``wait_scheduler_loops``). The Airflow is shared: only runs the
scheduler makes count (an operator's manual run elsewhere is not one), and every DAG's pause state
is put back (``dags_as_found``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.airflow_rest import StackAirflow
from tests.support.schedules import AS_SHIPPED, PURGE, now, parsed_with, run_keys

pytestmark = [pytest.mark.e2e]


def test_unpausing_every_dag_as_shipped_starts_no_run(live_airflow: StackAirflow) -> None:
    dags = live_airflow.dags()
    assert [d for d, dag in dags.items() if not parsed_with(AS_SHIPPED)(dag)] == []   # the stack's are as shipped
    before = run_keys(live_airflow.runs())
    try:
        live_airflow.set_paused(set(dags), False)
        unpaused_at = now()
        live_airflow.wait_scheduler_loops(after=unpaused_at, loops=2)

        assert {key for key in run_keys(live_airflow.runs()) - before if key[1] != "manual"} == set()
        # ... and none is due later: no DAG has a next run.
        due = {d: dag["next_dagrun_run_after"] for d, dag in live_airflow.dags().items()}
        assert {d: when for d, when in due.items() if when is not None} == {}
    finally:
        live_airflow.set_paused(set(dags), True)


@pytest.mark.parametrize(("dag_id", "conf", "param"), [
    ("solve_message_inconsistencies", {"user": "nobody"}, "user"),
    (PURGE, {"retention": "forever"}, "retention"),
], ids=["repair-as-shipped", "purge-as-shipped"])
def test_a_refused_trigger_creates_no_run_and_the_unpausing_starts_none(
        live_airflow: StackAirflow, dag_id: str, conf: dict[str, Any], param: str) -> None:
    assert parsed_with(AS_SHIPPED)(live_airflow.dags()[dag_id])
    live_airflow.set_paused([dag_id], True)   # as shipped (dags_as_found puts back what it was)
    before = run_keys(live_airflow.runs(dag_id))

    with live_airflow.api() as client:
        refused = client.post(f"/api/v2/dags/{dag_id}/dagRuns", json={"logical_date": None, "conf": conf})
    assert refused.status_code == 400, refused.text
    assert f"Invalid input for param {param}" in refused.json()["detail"]
    assert live_airflow.dags()[dag_id]["is_paused"] is True
    assert run_keys(live_airflow.runs(dag_id)) == before

    # The trigger form, its "unpause" box ticked (the default), sends the unpausing beside the
    # trigger, refused or not: the DAG is unpaused and still nothing may start.
    try:
        live_airflow.set_paused([dag_id], False)
        unpaused_at = now()
        live_airflow.wait_scheduler_loops(after=unpaused_at, loops=2)
        assert run_keys(live_airflow.runs(dag_id)) == before
        assert live_airflow.dags()[dag_id]["next_dagrun_run_after"] is None   # no schedule as shipped
    finally:
        live_airflow.set_paused([dag_id], True)
