"""James's admin route and Airflow's own API both run the message-inconsistency DAG on the real stack.

Data: a few inconsistencies seeded through the fault seam in ``james_keyspace`` (where the
stack's Airflow connections point) for a user of this session only. (1) An operator's script
triggers a dry run through Airflow's REST API: the report counts exactly the seeded faults of
that user. (2) ``POST /messages?task=SolveInconsistencies`` on a WebAdmin wired to that Airflow
(a mail server process of this test, roles webadmin and tasks, on the stack's keyspace): 201,
the task completes, its ``additionalInformation`` carries the report's counters and the DAG run
id, Airflow's API confirms that run and its report, and the user's projection equals the truth.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterator

import pytest

from include.stack.endpoints import Endpoints
from include.stack.settings import StackSettings
from mailserver.airflow.api import DagRunState, trigger_checked
from mailserver.cassandra.session import CassandraSession
from mailserver.mailets.config import DEFAULT_FILE
from tests.integration.maintenance.test_message_inconsistencies_job import break_messages
from tests.support.airflow_stack import STACK_KEYSPACE, api
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, WebAdminProcess, server_env

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG = "solve_message_inconsistencies"
ADDED, REMOVED, OUTDATED = 3, 2, 2
RUN_TIMEOUT = 1200.0


@pytest.fixture(scope="module")
def seeded(stack_keyspace):
    from tests.support.maintenance import seed_mail

    mail = seed_mail(stack_keyspace, users=1, mailboxes_per_user=2, messages_per_mailbox=10)
    break_messages(stack_keyspace, mail, added=ADDED, removed=REMOVED, outdated=OUTDATED)
    return mail


@pytest.fixture(scope="module")
def webadmin(airflow_settings, tmp_path_factory) -> Iterator[WebAdminProcess]:
    """A mail server of this test on the stack's keyspace, wired to the stack's Airflow."""
    ep = Endpoints.from_settings(StackSettings())
    tag = uuid.uuid4().hex[:8]
    with IsolatedVhost(ep, f"airflow-e2e-{tag}") as vhost:
        env = server_env(ep, vhost.amqp_url, STACK_KEYSPACE, f"airflow-e2e-{tag}", DEFAULT_FILE,
                         MAILSERVER_ROLES="webadmin,tasks", MAILSERVER_NODE_NAME=f"airflow-e2e-{tag}",
                         MAILSERVER_AIRFLOW_URL=airflow_settings.url,
                         MAILSERVER_AIRFLOW_USERNAME=airflow_settings.username,
                         MAILSERVER_AIRFLOW_PASSWORD=airflow_settings.password,
                         MAILSERVER_AIRFLOW_POLL_INTERVAL="3")
        server = WebAdminProcess(env, tmp_path_factory.mktemp("airflow-e2e") / "mailserver.log").start()
        try:
            yield server
        finally:
            server.terminate()


def webadmin_call(server: WebAdminProcess, method: str, path: str, timeout: float = 30) -> tuple[int, dict]:
    request = urllib.request.Request(server.webadmin_url + path, method=method,
                                     headers={"Password": WEBADMIN_PASSWORD})
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.status, json.loads(response.read() or b"null")


def own_projection_equals_truth(session: CassandraSession, seeded) -> None:
    mine = {mailbox.value for mailbox in seeded.by_mailbox}
    columns = "mailboxid, uid, messageid, modseq, flagseen, flagflagged, userflags, headercontent"

    def rows(table: str) -> dict:
        return {(r["mailboxid"], r["uid"]): r for r in session.execute(f"SELECT {columns} FROM {table}")
                if r["mailboxid"] in mine}
    truth = rows("imapUidTable")
    assert len(truth) == 2 * 10 + ADDED - REMOVED
    assert rows("messageIdTable") == truth


def test_an_operator_triggers_a_dry_run_through_airflow_rest_api(airflow_settings, http_dag_runs, seeded):
    user = seeded.users[0].value
    run_id = f"e2e_rest__{uuid.uuid4().hex[:12]}"
    run = trigger_checked(http_dag_runs, DAG, run_id, {"dry_run": True, "user": user})
    deadline = time.monotonic() + RUN_TIMEOUT
    while not run.state.finished:
        assert time.monotonic() < deadline, f"run {run_id} still {run.state}"
        time.sleep(5)
        run = http_dag_runs.get(DAG, run_id)
    assert run.state is DagRunState.SUCCESS
    report = http_dag_runs.report(DAG, run_id)
    assert report["outcome"] == "DRY_RUN"
    assert report["detected"] == {"orphanImapUidEntry": ADDED, "orphanMessageIdEntry": REMOVED,
                                  "outdatedMessageIdEntry": OUTDATED}
    assert report["processedImapUidEntries"] == 2 * 10 + ADDED - REMOVED


def test_james_admin_route_runs_the_dag_and_the_task_view_shows_its_report(
        airflow_settings, webadmin, stack_keyspace, seeded):
    status, body = webadmin_call(webadmin, "POST", "/messages?task=SolveInconsistencies")
    assert status == 201
    task_id = body["taskId"]

    status, report = webadmin_call(webadmin, "GET", f"/tasks/{task_id}/await?timeout={int(RUN_TIMEOUT)}",
                                   timeout=RUN_TIMEOUT + 30)
    assert status == 200
    info = report["additionalInformation"]
    assert (report["type"], report["status"]) == ("solve-message-inconsistencies", "completed"), report
    # Submitted here; any node sharing the keyspace may run it (the stack's own mail server too).
    assert report["submittedFrom"].startswith("airflow-e2e-")
    assert report["executedOn"]
    assert info["type"] == "solve-message-inconsistencies" and info["dagId"] == DAG
    assert info["dagRunState"] == "success" and info["outcome"] == "COMPLETED"
    # The keyspace is shared: at least this test's faults were fixed (others' data may add to the counts).
    assert info["addedMessageIdEntries"] >= ADDED
    assert info["removedMessageIdEntries"] >= REMOVED
    assert info["updatedMessageIdEntries"] >= OUTDATED
    assert info["processedImapUidEntries"] >= 2 * 10 + ADDED - REMOVED
    run_id = info["dagRunId"]
    assert info["airflowUrl"] == f"{airflow_settings.url}/dags/{DAG}/runs/{run_id}"

    # Airflow's own API confirms the run the task followed, and its report is the task's counters.
    with api(airflow_settings) as client:
        run = client.get(f"/api/v2/dags/{DAG}/dagRuns/{run_id}").json()
        xcom = client.get(f"/api/v2/dags/{DAG}/dagRuns/{run_id}/taskInstances/report/xcomEntries/return_value")
    assert (run["state"], run["conf"], run["run_type"]) == ("success", {}, "manual")
    value = xcom.json()["value"]
    value = json.loads(value) if isinstance(value, str) else value
    for counter in ("processedImapUidEntries", "processedMessageIdEntries", "addedMessageIdEntries",
                    "updatedMessageIdEntries", "removedMessageIdEntries", "outcome"):
        assert info[counter] == value[counter], counter

    own_projection_equals_truth(stack_keyspace, seeded)
