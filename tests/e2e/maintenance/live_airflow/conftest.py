"""The platform as an operator finds it: the stack's Airflow (api-server, scheduler, dag-processor,
triggerer on PostgreSQL) with the repository's DAGs as shipped. Its connections are the stack's:
``james_keyspace`` (tests seed users of their own there), the stack's mail server's WebAdmin, Spark
on ``local[*]``.

It is shared: other tests' runs may be there, and DAGs may be paused or not. Each test here finds
the DAGs as they are, asserts only on the runs it made, and leaves every DAG's pause state as it
found it (``dags_as_found``).

An operator in front of it: Debian's Chromium driven by Playwright, signed in to its UI.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.airflow_rest import StackAirflow
from tests.support.airflow_stack import StackWebAdmin, api, stack_airflow, stack_airflow_rest, wait_for_dag
from tests.support.private_airflow import REPO, dag_ids

CHROMIUM = Path("/usr/bin/chromium")
# A loaded machine: the UI's pages wait on an API that may answer slowly.
UI_TIMEOUT_MS = 120_000


@pytest.fixture(scope="session")
def live_airflow() -> StackAirflow:
    settings = stack_airflow()
    with api(settings) as client:   # an Airflow started just now may not have parsed every DAG file yet
        for dag_id in sorted(dag_ids(REPO / "dags")):
            wait_for_dag(client, dag_id)
    return stack_airflow_rest(settings)


@pytest.fixture(autouse=True)
def dags_as_found(live_airflow: StackAirflow) -> Iterator[dict[str, bool]]:
    """Each DAG's pause state before the test, put back after it."""
    found = live_airflow.paused()
    yield found
    changed = {dag_id for dag_id, paused in live_airflow.paused().items() if found.get(dag_id, paused) != paused}
    for paused in (True, False):
        live_airflow.set_paused({d for d in changed if found[d] is paused}, paused)


@pytest.fixture(scope="session")
def stack_webadmin(live_airflow: StackAirflow) -> StackWebAdmin:
    return StackWebAdmin.of_stack()


@pytest.fixture(scope="package")
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
def operator(chromium: Browser, live_airflow: StackAirflow) -> Iterator[Page]:
    """A signed-in operator's page."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000}, base_url=live_airflow.url)
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    page.goto("/")
    page.get_by_label("Username").fill(live_airflow.username)
    page.get_by_label("Password").fill(live_airflow.password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda url: "/auth/login" not in url)
    yield page
    context.close()
