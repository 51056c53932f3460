"""The pages of Airflow 3's UI an operator uses, as Playwright sees them: the trigger form and a run's page."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from playwright.sync_api import Locator, Page, expect


def trigger_form(page: Page, dag_id: str) -> Locator:
    """The DAG's trigger dialog, opened from its page, its params shown."""
    page.goto(f"/dags/{dag_id}")
    page.get_by_role("button", name="Trigger").first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text("Run Parameters")).to_be_visible()
    return dialog


def tick_switch(dialog: Locator, param: str) -> None:
    """Turn a boolean param's switch on (the input is hidden: its label takes the click)."""
    switch = dialog.locator(f"[name=element_{param}]")
    dialog.locator(f"label:has([name=element_{param}])").click()
    expect(switch).to_be_checked()


def submit(page: Page, dialog: Locator) -> tuple[int, dict[str, Any]]:
    """Click Trigger; the status and body of the API's answer to the trigger."""
    with page.expect_response(lambda r: r.request.method == "POST" and r.url.endswith("/dagRuns")) as answer:
        dialog.get_by_test_id("trigger-dag-submit").click()
    return answer.value.status, answer.value.json()


def run_page(dag_id: str, run_id: str) -> str:
    return f"/dags/{dag_id}/runs/{quote(run_id, safe='')}"
