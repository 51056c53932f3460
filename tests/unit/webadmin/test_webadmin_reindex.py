"""James's reIndex routes (webadmin reference §9) as runs of the reindex_mailboxes DAG (memory ``DagRuns``,
real worker): the route -> DAG conf mapping, James's task types and echoed fields, and the 400s."""

from __future__ import annotations

import pytest

from mailserver.airflow.memory import MemoryDagRuns, succeed_with
from mailserver.airflow.procedures import PROCEDURES
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
    ("/mailboxes?task=reIndex&reIndexFailedMessagesOf=4a8e3f9e-0000-0000-0000-000000000000",
     "'reIndexFailedMessagesOf' is not supported yet"),
])
def test_invalid_reindex_requests_are_400_and_start_nothing(client, airflow, url, details):  # noqa: F811
    body = error(client.post(url))
    assert (body["statusCode"], body["type"]) == (400, "InvalidArgument"), body
    assert body["details"].startswith(details), body
    assert airflow.triggered == [] and client.ctx.tasks.list() == []
