"""An operator in the Airflow UI: Debian's Chromium, driven by Playwright, against ``live_airflow``.

The trigger form of a paused repair DAG with a parameter the API refuses: the reason shown in the
form, and no run, whether the form's "unpause" box (ticked by default) unpaused the DAG or not.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.support.airflow_rest import StackAirflow
from tests.support.airflow_ui import submit, trigger_form

pytestmark = [pytest.mark.e2e]

MESSAGES_DAG = "solve_message_inconsistencies"


@pytest.mark.parametrize("unpause_box", [False, True], ids=["unpause-unticked", "unpause-ticked-default"])
def test_a_parameter_the_form_refuses_is_shown_and_starts_nothing(live_airflow: StackAirflow, operator: Page,
                                                                   unpause_box: bool) -> None:
    live_airflow.set_paused([MESSAGES_DAG], True)   # as shipped (dags_as_found puts back what it was)
    before = run_ids(live_airflow)
    try:
        dialog = trigger_form(operator, MESSAGES_DAG)
        box = dialog.get_by_role("checkbox", name=f"Unpause {MESSAGES_DAG} on trigger")
        if not unpause_box:
            dialog.get_by_text(f"Unpause {MESSAGES_DAG} on trigger").click()
        expect(box).to_be_checked(checked=unpause_box)
        dialog.locator("[name=element_user]").fill("nobody")

        status, body = submit(operator, dialog)

        assert status == 400, body
        # The reason, naming the param, where the operator looks (the toast only says "Bad Request").
        expect(dialog).to_contain_text("Invalid input for param user: 'nobody' is not a 'idn-email'")
        if not unpause_box:
            assert live_airflow.dags()[MESSAGES_DAG]["is_paused"] is True
        # Unpaused or not, the scheduler starts nothing for it: no run now, after its next passes, or later.
        refused_at = live_airflow.scheduler_heartbeat()
        assert refused_at is not None
        live_airflow.wait_scheduler_loops(after=refused_at, loops=2)
        assert run_ids(live_airflow) == before
        assert live_airflow.dags()[MESSAGES_DAG]["next_dagrun_run_after"] is None
    finally:
        live_airflow.set_paused([MESSAGES_DAG], True)


def run_ids(airflow: StackAirflow) -> set[str]:
    """The DAG's runs: the shared Airflow may have some of other tests' (the refusal must add none)."""
    return {run["dag_run_id"] for run in airflow.runs(MESSAGES_DAG)}
