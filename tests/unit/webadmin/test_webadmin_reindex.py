"""James's reIndex routes (webadmin reference §9) as runs of the reindex_mailboxes DAG (memory ``DagRuns``,
real worker): the route -> DAG conf mapping, James's task types and echoed fields, and the 400s."""

from __future__ import annotations

import pytest

from mailserver.airflow.api import DagRunState
from mailserver.airflow.memory import MemoryDagRuns, succeed_with
from mailserver.airflow.procedures import PROCEDURES
from tests.support.events import eventually
from tests.unit.webadmin.test_webadmin_procedures import REPORT, awaited, client  # noqa: F401 (fixture)
from tests.unit.webadmin.webadmin_support import error

MAILBOX = "c0ffee00-1111-11ef-8000-000000000001"
DAG = "reindex_mailboxes"



@pytest.fixture
def airflow() -> MemoryDagRuns:
    """The reindex DAG declares the params of all its scopes (the union of its procedures' params)."""
    runs = MemoryDagRuns(base_url="http://airflow.test")
    params = {"dry_run", "rate", "slices"}
    for procedure in PROCEDURES.values():
        if procedure.dag_id == DAG:
            params |= {q.dag_param for q in procedure.params if q.dag_param}
    runs.add_dag(DAG, params, succeed_with(REPORT))
    return runs


ROUTES = [
    ("/mailboxes?task=reIndex", "full-reindexing", {}),
    ("/mailboxes?task=reIndex&mode=FIXOUTDATED&messagesPerSecond=200&dryRun=true", "full-reindexing",
     {"mode": "fixOutdated", "messages_per_second": 200, "dry_run": True}),
    (f"/mailboxes/{MAILBOX}?task=reIndex&mode=rebuildAll", "mailbox-reindexing",
     {"mailbox_id": MAILBOX, "mode": "rebuildAll"}),
    (f"/mailboxes/{MAILBOX.upper()}/mails/36?task=reIndex", "message-reindexing", {"mailbox_id": MAILBOX, "uid": 36}),
]


@pytest.mark.parametrize(("url", "task_type", "conf"), ROUTES, ids=[r[0] for r in ROUTES])
def test_each_reindex_route_runs_the_dag_with_its_scope(client, airflow, url, task_type, conf):  # noqa: F811
    report = awaited(client, client.post(url))
    assert (report["type"], report["status"]) == (task_type, "completed"), report
    run = airflow.triggered[-1]
    assert (run.dag_id, dict(run.conf)) == (DAG, conf)
    info = report["additionalInformation"]
    assert (info["type"], info["dagId"]) == (task_type, DAG)
    if "mailbox_id" in conf:
        assert info["mailboxId"] == MAILBOX
    if "uid" in conf:
        assert info["uid"] == 36


def test_reindex_of_one_user(client, airflow):  # noqa: F811
    client.ctx.domains.add("example.com")
    client.ctx.users.add_user("bob@example.com", "secret")
    report = awaited(client, client.post("/users/bob@example.com/mailboxes?task=reIndex&mode=fixOutdated"))
    assert report["type"] == "user-reindexing" and report["additionalInformation"]["username"] == "bob@example.com"
    assert dict(airflow.triggered[-1].conf) == {"user": "bob@example.com", "mode": "fixOutdated"}


def test_reindex_of_an_unknown_user_is_404(client, airflow):  # noqa: F811
    body = error(client.post("/users/nobody@example.com/mailboxes?task=reIndex"))
    assert body["statusCode"] == 404
    assert airflow.triggered == [] and client.ctx.tasks.list() == []


@pytest.mark.parametrize(("url", "details"), [
    ("/mailboxes?task=reIndex&mode=everything", "Invalid value supplied for query parameter 'mode': everything"),
    ("/mailboxes?task=reIndex&messagesPerSecond=0", "'messagesPerSecond' must be strictly positive"),
    ("/mailboxes?task=reIndex&messagesPerSecond=abc", 'For input string: "abc"'),
    ("/mailboxes/not-a-mailbox?task=reIndex", "Error while parsing 'mailbox'"),
    (f"/mailboxes/{MAILBOX}/mails/abc?task=reIndex", 'For input string: "abc"'),
    (f"/mailboxes/{MAILBOX}/mails/0?task=reIndex", "'uid' must be strictly positive"),
    (f"/mailboxes/{MAILBOX}?task=other", "Invalid value supplied for query parameter 'task': other. "
                                         "Supported values are [reIndex]"),
    (f"/mailboxes/{MAILBOX}", "'task' query parameter is compulsory. Supported values are [reIndex]"),
])
def test_invalid_reindex_requests_are_400_and_start_nothing(client, airflow, url, details):  # noqa: F811
    body = error(client.post(url))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument"), body
    assert body["details"].startswith(details), body
    assert airflow.triggered == [] and client.ctx.tasks.list() == []


# ------------------------------------------------------------------ reIndexFailedMessagesOf
OTHER_MAILBOX = "c0ffee00-1111-11ef-8000-000000000002"
FAILURES = {"messageFailures": {MAILBOX: [{"uid": 1}, {"uid": 36}], OTHER_MAILBOX: [{"uid": 7}]},
            "mailboxFailures": [], "failedReprocessedMailCount": 3, "successfullyReprocessedMailCount": 18,
            "outcome": "PARTIAL"}


def partial_then_recovered(conf):
    """A reindex failing 3 messages (the DAG run fails, its report listing them); the rerun of failures succeeds."""
    if conf.get("failures_of"):
        return DagRunState.SUCCESS, {"type": "error-recovery-indexation", "messageFailures": {},
                                     "mailboxFailures": [], "successfullyReprocessedMailCount": 3,
                                     "failedReprocessedMailCount": 0, "runningOptions": dict(conf)}
    return DagRunState.FAILED, {"type": "full-reindexing", **FAILURES}


@pytest.fixture
def failing_airflow(airflow) -> MemoryDagRuns:
    airflow.dags[DAG].outcome = partial_then_recovered
    return airflow


def test_failures_of_a_reindex_task_are_shown_and_rerun_by_a_recovery_task(client, failing_airflow):  # noqa: F811
    first = awaited(client, client.post("/mailboxes?task=reIndex"))
    assert (first["type"], first["status"]) == ("full-reindexing", "failed")
    info = first["additionalInformation"]
    assert info["messageFailures"] == FAILURES["messageFailures"] and info["mailboxFailures"] == []
    assert info["failedReprocessedMailCount"] == 3
    first_run = failing_airflow.triggered[-1].run_id

    recovery = awaited(client, client.post(f"/mailboxes?task=reIndex&reIndexFailedMessagesOf={first['taskId']}"
                                           "&messagesPerSecond=20&mode=fixOutdated"))
    assert (recovery["type"], recovery["status"]) == ("error-recovery-indexation", "completed"), recovery
    run = failing_airflow.triggered[-1]
    assert (run.dag_id, dict(run.conf)) == (DAG, {"failures_of": first_run, "messages_per_second": 20,
                                                  "mode": "fixOutdated"})
    info = recovery["additionalInformation"]
    assert info["type"] == "error-recovery-indexation" and info["dagRunId"] == run.run_id
    assert (info["successfullyReprocessedMailCount"], info["failedReprocessedMailCount"]) == (3, 0)
    assert info["messageFailures"] == {} and info["mailboxFailures"] == []

    # a recovery task is itself retriable (James's error-recovery-indexation is an IndexingDetailInformation)
    again = awaited(client, client.post(f"/mailboxes?task=reIndex&reIndexFailedMessagesOf={recovery['taskId']}"))
    assert again["type"] == "error-recovery-indexation"
    assert dict(failing_airflow.triggered[-1].conf) == {"failures_of": run.run_id}


def test_an_empty_reindex_failed_messages_of_is_a_full_reindex_as_james(client, airflow):  # noqa: F811
    report = awaited(client, client.post("/mailboxes?task=reIndex&reIndexFailedMessagesOf="))
    assert report["type"] == "full-reindexing" and dict(airflow.triggered[-1].conf) == {}


def refused(client, airflow, url) -> dict:  # noqa: F811
    before = (len(airflow.triggered), len(client.ctx.tasks.list()))
    body = error(client.post(url))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument"), body
    assert (len(airflow.triggered), len(client.ctx.tasks.list())) == before
    return body


def test_reindex_failed_messages_of_refuses_what_james_refuses(client, airflow):  # noqa: F811
    url = "/mailboxes?task=reIndex&reIndexFailedMessagesOf="
    assert refused(client, airflow, url + "not-a-uuid")["message"] == "Invalid task id"
    unknown = "bbdb69c9-082a-44b0-a85a-6e33e74287a5"
    assert refused(client, airflow, url + unknown)["message"] == f"TaskId {unknown} does not exist"

    counters = awaited(client, client.post("/mailboxes?task=RecomputeMailboxCounters"))
    body = refused(client, airflow, url + counters["taskId"])
    assert (body["message"], body["details"]) == (
        "Invalid task id", "'recompute-mailbox-counters' is not a valid type of task for retrying a failed indexing")
    one = awaited(client, client.post(f"/mailboxes/{MAILBOX}/mails/3?task=reIndex"))
    assert "'message-reindexing' is not a valid type" in refused(client, airflow, url + one["taskId"])["details"]
    # the task selector is still James's: missing or another value is its 400, whatever the task id
    assert "'task' query parameter is compulsory" in refused(
        client, airflow, f"/mailboxes?reIndexFailedMessagesOf={unknown}")["details"]


def test_reindex_failed_messages_of_an_unfinished_task_is_400(client, airflow):  # noqa: F811
    airflow.dags[DAG].hold = True
    response = client.post("/mailboxes?task=reIndex")
    task_id = response.json()["taskId"]
    # the worker triggers the held run on its own thread: wait for it, or ``refused`` would count it
    eventually(lambda: len(airflow.triggered) == 1, timeout=10)
    body = refused(client, airflow, f"/mailboxes?task=reIndex&reIndexFailedMessagesOf={task_id}")
    assert body["message"] == "Invalid task id" and "not yet finished" in body["details"]
    client.delete(f"/tasks/{task_id}")


def test_reindex_failed_messages_of_a_run_without_report_is_400(client, airflow):  # noqa: F811
    airflow.dags[DAG].outcome = lambda conf: (DagRunState.FAILED, None)   # the Spark job died: no report
    first = awaited(client, client.post("/mailboxes?task=reIndex"))
    assert first["status"] == "failed" and "messageFailures" not in first["additionalInformation"]
    body = refused(client, airflow, f"/mailboxes?task=reIndex&reIndexFailedMessagesOf={first['taskId']}")
    assert "lists no failures" in body["details"]
