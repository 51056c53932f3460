"""A freshly started platform of the tests' own: a real Airflow (api-server, scheduler, dag-processor,
triggerer) on a new database, with the repository's DAGs, whose connections are the maintenance
world's (its keyspace and WebAdmin, Spark on ``local[2]``). One per package: every test here starts
from the DAGs as shipped, paused, and leaves them paused.

An operator in front of it: Debian's Chromium driven by Playwright, signed in to its UI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.private_airflow import USERNAME, PrivateAirflow

CHROMIUM = Path("/usr/bin/chromium")
# A loaded machine: the UI's pages wait on an API that may answer slowly.
UI_TIMEOUT_MS = 120_000


@pytest.fixture(scope="package")
def live_airflow(maintenance_airflow, maintenance_webadmin, spark_env,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAirflow]:
    # maintenance_airflow put the maintenance world's AIRFLOW_CONN_* into this process's environment.
    airflow = PrivateAirflow(home=tmp_path_factory.mktemp("live-airflow"), base_env=dict(os.environ))
    try:
        yield airflow.start()
    finally:
        airflow.stop()


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
