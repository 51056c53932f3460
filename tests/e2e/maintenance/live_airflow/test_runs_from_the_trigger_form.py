"""An operator runs a repair from the Airflow UI (Debian's Chromium, driven by Playwright, on ``live_airflow``).

``recompute_current_quotas`` takes the server into maintenance mode for a real run. Its dry run,
triggered from the form, must leave maintenance mode off the whole time: the stack's mail server's
WebAdmin state is read every half second from the click on Trigger to the run's end, the Spark
task's running time included. A real run, scoped to one user from the form, shows its summary
(outcome and counts) on the run's page, where the listener plugin put the report as the run's note.

Three users' quotas are broken, in ``james_keyspace`` (where the stack's connections point): users
of this test only, so a dry run's "nothing written" is read on their quota rows; each test is one
Spark job.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime

import pytest
from playwright.sync_api import Page, expect

from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.session import CassandraSession
from tests.integration.maintenance.test_current_quotas_job import break_quotas, quotas_equal_messages
from tests.support.airflow_rest import StackAirflow
from tests.support.airflow_stack import STACK_KEYSPACE, StackWebAdmin
from tests.support.airflow_ui import run_page, submit, tick_switch, trigger_form
from tests.support.mail_projections import mailbox_context, seed_users, stored_quota, usage_by_cql
from tests.support.state_watch import StateWatch

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

QUOTAS_DAG = "recompute_current_quotas"
SPARK_TASK = "detect_repair_verify"
# One small Spark job and a handful of tasks; a loaded two-core machine has needed about three minutes.
RUN_TIMEOUT = 600.0


@pytest.fixture
def quotas_dag(live_airflow: StackAirflow, stack_webadmin: StackWebAdmin) -> Iterator[str]:
    """The DAG, paused as shipped; after the test, the runs it made are gone and no window of theirs is open
    (``dags_as_found`` puts its pause state back)."""
    live_airflow.set_paused([QUOTAS_DAG], True)
    before = {run["dag_run_id"] for run in live_airflow.runs(QUOTAS_DAG)}
    try:
        yield QUOTAS_DAG
    finally:
        live_airflow.set_paused([QUOTAS_DAG], True)
        live_airflow.delete_runs(QUOTAS_DAG, keep=before)   # an unfinished run is marked failed first
        state = stack_webadmin.get("/maintenance")
        if state.get("enabled") and str(state.get("reason", "")).startswith(f"Airflow {QUOTAS_DAG} run "):
            stack_webadmin.delete("/maintenance")


@pytest.fixture(scope="module")
def stack_keyspace(stack) -> Iterator[CassandraSession]:
    session = CassandraSession.connect(CassandraConfig(hosts=tuple(stack.cassandra_hosts.split(",")),
                                                       port=stack.cassandra_port, keyspace=STACK_KEYSPACE))
    yield session
    session.close()


@pytest.fixture
def broken_quotas(stack_keyspace, s3_blobs):
    """Three users with mail, each one's quota wrong (the listener's write failed)."""
    session = stack_keyspace
    ctx = mailbox_context(session, s3_blobs)
    return break_quotas(ctx, session, seed_users(ctx, session, users=3, inbox_messages=2, archive_messages=1))


def when(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)


def test_a_dry_run_from_the_form_keeps_maintenance_mode_off_throughout(
        live_airflow: StackAirflow, operator: Page, quotas_dag: str, stack_webadmin: StackWebAdmin,
        stack_keyspace: CassandraSession, broken_quotas) -> None:
    quotas_before = {user: stored_quota(stack_keyspace, user) for user in broken_quotas}
    maintenance_before = stack_webadmin.get("/maintenance")
    assert maintenance_before["enabled"] is False, maintenance_before

    dialog = trigger_form(operator, quotas_dag)
    tick_switch(dialog, "dry_run")
    with StateWatch(lambda: stack_webadmin.get("/maintenance")) as watch:
        status, created = submit(operator, dialog)   # the form's "unpause" box is ticked: the run starts
        assert status == 200 and created["conf"]["dry_run"] is True, created
        run_id = created["dag_run_id"]
        run = live_airflow.wait_run(quotas_dag, run_id, timeout=RUN_TIMEOUT)
    assert run["state"] == "success", live_airflow.task_states(quotas_dag, run_id)

    # Read while the job ran, not only before and after: the Spark task is where a real run's window is.
    spark = live_airflow.task_instance(quotas_dag, run_id, SPARK_TASK)
    during_job = watch.between(when(spark["start_date"]), when(spark["end_date"]))
    assert during_job, (f"maintenance mode never read while {SPARK_TASK} ran ({spark['start_date']} to "
                        f"{spark['end_date']}); read {len(watch.readings)} times, failed: {watch.failures}")
    # Never switched on, not even briefly: the whole state (since, by whom) is as it was.
    changed = [(r.at.isoformat(), r.state) for r in watch.readings if r.state != maintenance_before]
    assert changed == [], f"maintenance state was {maintenance_before}, during the dry run: {changed[:5]}"
    assert {user: stored_quota(stack_keyspace, user) for user in broken_quotas} == quotas_before


def test_a_real_run_from_the_form_shows_its_summary_on_the_run_page(
        live_airflow: StackAirflow, operator: Page, quotas_dag: str, stack_webadmin: StackWebAdmin,
        stack_keyspace: CassandraSession, broken_quotas) -> None:
    user, *others = broken_quotas

    dialog = trigger_form(operator, quotas_dag)
    dialog.locator("[name=element_user]").fill(str(user))
    with StateWatch(lambda: stack_webadmin.get("/maintenance")) as watch:
        status, created = submit(operator, dialog)
        assert status == 200, created
        assert created["conf"]["dry_run"] is False and created["conf"]["user"] == str(user), created
        run_id = created["dag_run_id"]
        run = live_airflow.wait_run(quotas_dag, run_id, timeout=RUN_TIMEOUT)
    assert run["state"] == "success", live_airflow.task_states(quotas_dag, run_id)
    quotas_equal_messages(stack_keyspace, [user])
    for other in others:   # one user asked for: the others' quotas are still wrong
        assert stored_quota(stack_keyspace, other) != usage_by_cql(stack_keyspace, other), other
    # A real run does switch it on, and the watch sees it (what makes the dry run's "never on" mean something).
    assert any(state["enabled"] for state in watch.states()), f"read {len(watch.readings)} times: never on"
    assert stack_webadmin.get("/maintenance")["enabled"] is False

    note = live_airflow.wait_run_note(quotas_dag, run_id)
    assert "recompute-current-quotas: COMPLETED" in note, note
    # Where the operator reads it: the run page's header shows the note's first line (the outcome) ...
    operator.goto(run_page(quotas_dag, run_id))
    expect(operator.get_by_text("recompute-current-quotas: COMPLETED").first).to_be_visible()
    # ... and the note's dialog the whole summary: one quota root fixed, none failed.
    operator.get_by_role("button", name="Edit note").first.click()
    summary = operator.get_by_role("dialog").filter(has_text="Dag Run Note")
    expect(summary).to_contain_text("recompute-current-quotas: COMPLETED")
    expect(summary).to_contain_text(re.compile(r"fixed:\s*1 \(listed in the report\)"))
    expect(summary).to_contain_text(re.compile(r"failed:\s*0\b"))
