"""What a real scheduler does with the DAGs as shipped, and with the schedules an operator enables.

Through Airflow's REST API, on a freshly started platform (``live_airflow``), whose dag-processor and
scheduler get the ``MAILPLATFORM_SCHEDULE__*`` settings of docs/operations.md ("Scheduling and
safety"): unpausing starts nothing unless a schedule was enabled, a refused trigger creates no run
(nor does the unpausing the trigger form does with it), and an enabled schedule runs the scan and
the purge at their next time.

"Nothing started" is asserted once the scheduler has made full passes after the unpausing: its loop
heartbeats between two passes (``wait_scheduler_loops``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from mailplatform.scheduling import variable_of

from tests.support.private_airflow import PrivateAirflow

pytestmark = [pytest.mark.e2e]

SCAN = "detect_cassandra_inconsistencies"
PURGE = "purge_deleted_messages_vault"
SHIPPED_CRONS = {SCAN: "0 2 * * *", PURGE: "0 3 1 * *"}
AS_SHIPPED: dict[str, str] = {}
ENABLED = {variable_of(SCAN): "on", variable_of(PURGE): "on"}   # what docs/operations.md tells an operator
EVERY_MINUTE = {variable_of(SCAN): "* * * * *", variable_of(PURGE): "* * * * *"}


def parsed_with(settings: Mapping[str, str]) -> Callable[[dict[str, Any]], bool]:
    """Whether a DAG, as the API shows it, was parsed with ``settings``."""
    def parsed(dag: dict[str, Any]) -> bool:
        dag_id = dag["dag_id"]
        if dag_id not in SHIPPED_CRONS:
            return True
        value = settings.get(variable_of(dag_id))
        if value is None:   # whatever it ships with, but none of the schedules these tests enable
            return dag["timetable_summary"] not in {SHIPPED_CRONS[dag_id], *EVERY_MINUTE.values()}
        return dag["timetable_summary"] == (SHIPPED_CRONS[dag_id] if value == "on" else value)
    return parsed


def now() -> datetime:
    return datetime.now(UTC)


def run_keys(runs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(run["dag_id"], run["run_type"], run["dag_run_id"]) for run in runs}


def test_unpausing_every_dag_of_a_fresh_platform_starts_no_run(live_airflow: PrivateAirflow) -> None:
    live_airflow.reconfigure(AS_SHIPPED, parsed_with(AS_SHIPPED))
    dags = live_airflow.dags()
    assert sorted(d for d, dag in dags.items() if not dag["is_paused"]) == []   # Airflow's default: paused
    before = run_keys(live_airflow.runs())
    try:
        live_airflow.set_paused(set(dags), False)
        unpaused_at = now()
        live_airflow.wait_scheduler_loops(after=unpaused_at, loops=3)

        assert run_keys(live_airflow.runs()) - before == set()
        # ... and none is due later: no DAG has a next run.
        due = {d: dag["next_dagrun_run_after"] for d, dag in live_airflow.dags().items()}
        assert {d: when for d, when in due.items() if when is not None} == {}
    finally:
        live_airflow.set_paused(set(dags), True)


@pytest.mark.parametrize(("settings", "dag_id", "conf", "param"), [
    (AS_SHIPPED, "solve_message_inconsistencies", {"user": "nobody"}, "user"),
    (AS_SHIPPED, PURGE, {"retention": "forever"}, "retention"),
    # The purge's monthly schedule enabled: unpausing it on any day but the 1st must not purge at once.
    (ENABLED, PURGE, {"retention": "forever"}, "retention"),
], ids=["repair-as-shipped", "purge-as-shipped", "purge-schedule-enabled"])
def test_a_refused_trigger_creates_no_run_and_the_unpausing_starts_none(
        live_airflow: PrivateAirflow, settings: dict[str, str], dag_id: str, conf: dict[str, Any],
        param: str) -> None:
    live_airflow.reconfigure(settings, parsed_with(settings))
    assert live_airflow.dags()[dag_id]["is_paused"] is True
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
        live_airflow.wait_scheduler_loops(after=unpaused_at, loops=3)
        assert run_keys(live_airflow.runs(dag_id)) == before
        due = live_airflow.dags()[dag_id]["next_dagrun_run_after"]
        # No schedule, or only the next time to come (the 1st of next month), never the last one.
        assert due is None or datetime.fromisoformat(due) > unpaused_at, due
    finally:
        live_airflow.set_paused([dag_id], True)


def test_enabled_schedules_start_the_scan_and_the_purge_at_their_time(live_airflow: PrivateAirflow) -> None:
    live_airflow.reconfigure(EVERY_MINUTE, parsed_with(EVERY_MINUTE))
    dags = {SCAN, PURGE}
    try:
        live_airflow.set_paused(dags, False)
        scheduled = first_scheduled_runs(live_airflow, dags, timeout=300)
        for run in scheduled.values():
            # At a cron point: the start of a minute.
            run_after = datetime.fromisoformat(run["run_after"])
            assert (run_after.second, run_after.microsecond) == (0, 0), run
    finally:
        live_airflow.set_paused(dags, True)
        for dag_id in dags:
            live_airflow.delete_runs(dag_id)


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
