"""What a real scheduler does with the schedules an operator enables (docs/operations.md, "Scheduling
and safety"), through Airflow's REST API on a freshly started platform (``private_airflow``):
its DAGs start paused, unpausing the purge with its monthly schedule enabled purges nothing at once
(nor does a refused trigger), and an enabled schedule runs the scan and the purge at their next time.
The DAGs as shipped are tested on the stack's Airflow (``live_airflow/test_scheduling_through_the_rest_api.py``).

"Nothing started" is asserted once the scheduler has made full passes after the unpausing: its loop
heartbeats between two passes (``wait_scheduler_loops``).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.support.private_airflow import PrivateAirflow
from tests.support.schedules import ENABLED, EVERY_MINUTE, PURGE, SCAN, now, parsed_with, run_keys

pytestmark = [pytest.mark.e2e]


def test_every_dag_of_a_fresh_platform_is_paused(private_airflow: PrivateAirflow) -> None:
    dags = private_airflow.dags()
    assert set(dags) == {SCAN, PURGE}
    assert sorted(d for d, dag in dags.items() if not dag["is_paused"]) == []   # Airflow's default: paused


def test_with_the_purge_schedule_enabled_a_refused_trigger_creates_no_run_and_the_unpausing_starts_none(
        private_airflow: PrivateAirflow) -> None:
    # The purge's monthly schedule enabled: unpausing it on any day but the 1st must not purge at once.
    private_airflow.reconfigure(ENABLED, parsed_with(ENABLED))
    assert private_airflow.dags()[PURGE]["is_paused"] is True
    before = run_keys(private_airflow.runs(PURGE))

    with private_airflow.api() as client:
        refused = client.post(f"/api/v2/dags/{PURGE}/dagRuns",
                              json={"logical_date": None, "conf": {"retention": "forever"}})
    assert refused.status_code == 400, refused.text
    assert "Invalid input for param retention" in refused.json()["detail"]
    assert private_airflow.dags()[PURGE]["is_paused"] is True
    assert run_keys(private_airflow.runs(PURGE)) == before

    try:
        private_airflow.set_paused([PURGE], False)
        unpaused_at = now()
        private_airflow.wait_scheduler_loops(after=unpaused_at, loops=2)
        assert run_keys(private_airflow.runs(PURGE)) == before
        due = private_airflow.dags()[PURGE]["next_dagrun_run_after"]
        # Only the next time to come (the 1st of next month), never the last one.
        assert due is None or datetime.fromisoformat(due) > unpaused_at, due
    finally:
        private_airflow.set_paused([PURGE], True)


def test_enabled_schedules_start_the_scan_and_the_purge_at_their_time(private_airflow: PrivateAirflow) -> None:
    private_airflow.reconfigure(EVERY_MINUTE, parsed_with(EVERY_MINUTE))
    dags = {SCAN, PURGE}
    try:
        private_airflow.set_paused(dags, False)
        scheduled = first_scheduled_runs(private_airflow, dags, timeout=300)
        for run in scheduled.values():
            # At a cron point: the start of a minute.
            run_after = datetime.fromisoformat(run["run_after"])
            assert (run_after.second, run_after.microsecond) == (0, 0), run
    finally:
        private_airflow.set_paused(dags, True)
        for dag_id in dags:
            private_airflow.delete_runs(dag_id)


def first_scheduled_runs(airflow: PrivateAirflow, dag_ids: set[str], timeout: float) -> dict[str, dict[str, Any]]:
    """The first scheduled run of each DAG; each DAG is paused and its run deleted as soon as it has one
    (a real purge or scan has nothing to do in this test)."""
    deadline = time.monotonic() + timeout
    found: dict[str, dict[str, Any]] = {}
    while True:
        try:
            runs = airflow.runs()
        except httpx.TransportError:   # a slow answer of a loaded machine: ask again until the deadline
            runs = []
        for run in runs:
            if run["dag_id"] in dag_ids - set(found) and run["run_type"] == "scheduled":
                found[run["dag_id"]] = run
                airflow.set_paused([run["dag_id"]], True)
                airflow.delete_runs(run["dag_id"])
        if set(found) == dag_ids:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"scheduled runs after {timeout:.0f} s: {sorted(found)} of {sorted(dag_ids)}; "
                                 f"DAGs: { {d: airflow.dags()[d]['next_dagrun_run_after'] for d in dag_ids} }")
        time.sleep(3)
