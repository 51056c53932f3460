"""An operator in the Airflow UI: Debian's Chromium, driven by Playwright, against ``live_airflow``.

The trigger form of a repair DAG with a parameter the API refuses: the reason shown in the form,
and no run, whether the form's "unpause" box (ticked by default) unpaused the DAG or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

from tests.support.private_airflow import USERNAME, PrivateAirflow

pytestmark = [pytest.mark.e2e]

CHROMIUM = Path("/usr/bin/chromium")
MESSAGES_DAG = "solve_message_inconsistencies"
# A loaded machine: the UI's pages wait on an API that may answer slowly.
UI_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        pytest.fail(f"Debian's chromium is missing ({CHROMIUM}): `make bootstrap` installs it "
                    "(apt-get install chromium); Playwright never downloads a browser here", pytrace=False)
    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        yield browser
        browser.close()


@pytest.fixture
def operator(chromium: Browser, live_airflow: PrivateAirflow) -> Iterator[Page]:
    """A signed-in operator's page."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, base_url=live_airflow.url)
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    page.goto("/")
    page.get_by_label("Username").fill(USERNAME)
    page.get_by_label("Password").fill(live_airflow.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/auth/login" not in url)
    yield page
    context.close()


def trigger_form(page: Page, dag_id: str) -> Locator:
    page.goto(f"/dags/{dag_id}")
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text("Run Parameters")).to_be_visible()
    return dialog


def submit(page: Page, dialog: Locator) -> tuple[int, dict[str, Any]]:
    """Click Trigger; the status and body of the API's answer to the trigger."""
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/dagRuns")) as answer:
        dialog.get_by_test_id("trigger-dag-submit").click()
    return answer.value.status, answer.value.json()


@pytest.mark.parametrize("unpause_box", [False, True], ids=["unpause-unticked", "unpause-ticked-default"])
def test_a_parameter_the_form_refuses_is_shown_and_starts_nothing(live_airflow: PrivateAirflow, operator: Page,
                                                                   unpause_box: bool) -> None:
    assert live_airflow.dags()[MESSAGES_DAG]["is_paused"] is True
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
        live_airflow.wait_scheduler_loops(after=refused_at, loops=3)
        assert live_airflow.runs(MESSAGES_DAG) == []
        assert live_airflow.dags()[MESSAGES_DAG]["next_dagrun_run_after"] is None
    finally:
        live_airflow.set_paused([MESSAGES_DAG], True)
