"""James's maintenance-procedure routes, run as Airflow DAG runs (memory ``DagRuns``, real worker).

What is checked is the mapping from each route to its DAG and DAG conf (the one table of
``mailserver.airflow.procedures``), James's validation (400/404 before any task), the 503 when
Airflow is not configured, and the task view showing the DAG run's report.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.airflow.memory import MemoryDagRuns, succeed_with
from mailserver.airflow.procedures import PROCEDURES
from mailserver.tasks.builtin.dag_run import Polling
from mailserver.tasks.builtin.migration import SchemaVersions
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.task_support import FakeSchemaSession, fake_migration
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

SAFE = {"I-KNOW-WHAT-I-M-DOING": "ALL-SERVICES-ARE-OFFLINE"}
# Every DAG with the params the table may send (the DAG files are checked against the table elsewhere).
DAGS = {p.dag_id: {"dry_run", "rate", "slices", *(q.dag_param for q in p.params)} for p in PROCEDURES.values()}
REPORT = {"processedImapUidEntries": 12, "outcome": "COMPLETED"}


@contextmanager
def webadmin(airflow: MemoryDagRuns | None, ran: list[int] | None = None) -> Iterator[tuple[TestClient, object]]:
    store = MemoryTaskStore()
    session = FakeSchemaSession(12)
    versions = SchemaVersions(session, {13: fake_migration(13, ran if ran is not None else [])}, 13)  # type: ignore[arg-type]
    registry = register_builtin(TaskRegistry(), schema_versions=versions, dag_runs=airflow,
                                polling=Polling(0.01, 1.0))
    ctx = make_context(tasks=TaskManager(store, "node"), schema_versions=versions, dag_runs=airflow)
    with TaskWorker(store, registry, "node", poll_interval=0.01, heartbeat_interval=0.02):
        yield TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False), ctx


@pytest.fixture
def airflow() -> MemoryDagRuns:
    runs = MemoryDagRuns(base_url="http://airflow.test")
    for dag_id, params in DAGS.items():
        runs.add_dag(dag_id, params, succeed_with(REPORT))
    return runs


@pytest.fixture
def client(airflow):
    with webadmin(airflow) as (client, ctx):
        client.ctx = ctx
        yield client


def awaited(client, response) -> dict:
    assert response.status_code == 201, response.text
    task_id = response.json()["taskId"]
    assert response.headers["location"] == f"/tasks/{task_id}"
    return client.get(f"/tasks/{task_id}/await?timeout=20").json()


# (request, James's task type, DAG, the conf the DAG run gets)
ROUTES = [
    (("POST", "/messages?task=SolveInconsistencies", {}), "solve-message-inconsistencies",
     "solve_message_inconsistencies", {}),
    (("POST", "/messages?task=SolveInconsistencies&messagesPerSecond=250&dryRun=true", {}),
     "solve-message-inconsistencies", "solve_message_inconsistencies", {"rate": 250, "dry_run": True}),
    (("POST", "/mailboxes?task=SolveInconsistencies", SAFE), "solve-mailbox-inconsistencies",
     "solve_mailbox_inconsistencies", {}),
    (("POST", "/mailboxes?task=SolveInconsistencies&maxIterations=3&autoMerge=false",
      {"I-KNOW-WHAT-I-M-DOING": "all-services-are-offline"}),
     "solve-mailbox-inconsistencies", "solve_mailbox_inconsistencies", {"max_iterations": 3}),
    (("POST", "/cassandra/mappings?action=SolveInconsistencies", {}), "cassandra-mappings-solve-inconsistencies",
     "solve_mappings_sources_inconsistencies", {}),
    (("POST", "/mailboxes?task=RecomputeMailboxCounters&trustMessageProjection=true", {}),
     "recompute-mailbox-counters", "recompute_mailbox_counters", {"trust_message_projection": True}),
    (("POST", "/mailboxes?task=RecomputeMailboxCounters&trustMessageProjection=false", {}),
     "recompute-mailbox-counters", "recompute_mailbox_counters", {"trust_message_projection": False}),
    (("POST", "/quota/users?task=RecomputeCurrentQuotas", {}), "recompute-current-quotas",
     "recompute_current_quotas", {}),
    (("POST", "/quota/users?task=RecomputeCurrentQuotas&usersPerSecond=20&quotaComponent=mailbox"
              "&quotaComponent=JMAP_UPLOADS", {}), "recompute-current-quotas", "recompute_current_quotas",
     {"rate": 20, "quota_components": ["MAILBOX", "JMAP_UPLOADS"]}),
    (("POST", "/mailboxes?task=recomputeFastViewProjectionItems&messagesPerSecond=10", {}),
     "RecomputeAllFastViewProjectionItemsTask", "recompute_fast_view_projection", {"rate": 10}),
    (("POST", "/messages?task=recomputeFastViewProjectionItems", {}),
     "RecomputeAllFastViewProjectionItemsTask", "recompute_fast_view_projection", {}),
]


@pytest.mark.parametrize(("request_", "task_type", "dag_id", "conf"), ROUTES,
                         ids=[r[0][1] for r in ROUTES])
def test_each_route_triggers_its_dag_with_the_mapped_conf(client, airflow, request_, task_type, dag_id, conf):
    method, url, headers = request_
    report = awaited(client, client.request(method, url, headers=headers))
    assert (report["type"], report["status"]) == (task_type, "completed"), report
    run = airflow.triggered[-1]
    assert (run.dag_id, dict(run.conf)) == (dag_id, conf)
    info = report["additionalInformation"]
    assert (info["type"], info["dagId"], info["dagRunId"], info["dagRunState"]) == \
        (task_type, dag_id, run.run_id, "success")
    assert (info["processedImapUidEntries"], info["outcome"], info["runningOptions"]) == (12, "COMPLETED", conf)
    assert info["airflowUrl"] == f"http://airflow.test/dags/{dag_id}/runs/{run.run_id}"


@pytest.mark.parametrize("path", ["/users/bob@example.com/mailboxes", "/users/bob@example.com/messages"])
def test_fast_view_of_one_user(client, airflow, path):
    client.ctx.domains.add("example.com")
    client.ctx.users.add_user("bob@example.com", "secret")
    report = awaited(client, client.post(f"{path}?task=recomputeFastViewProjectionItems&messagesPerSecond=5"))
    assert report["type"] == "RecomputeUserFastViewProjectionItemsTask"
    assert report["additionalInformation"]["username"] == "bob@example.com"
    assert dict(airflow.triggered[-1].conf) == {"user": "bob@example.com", "rate": 5}


def test_fast_view_of_an_unknown_user_is_404(client, airflow):
    body = error(client.post("/users/nobody@example.com/mailboxes?task=recomputeFastViewProjectionItems"))
    assert body["statusCode"] == 404 and body["type"] == "notFound"
    assert airflow.triggered == [] and client.ctx.tasks.list() == []


@pytest.mark.parametrize(("request_", "details"), [
    (("/messages", {}), "'task' query parameter is compulsory. "
                        "Supported values are [SolveInconsistencies, recomputeFastViewProjectionItems]"),
    (("/messages?task=", {}), "'task' query parameter cannot be empty or blank. "
                              "Supported values are [SolveInconsistencies, recomputeFastViewProjectionItems]"),
    (("/messages?task=solveInconsistencies", {}), "Invalid value supplied for query parameter 'task': "
     "solveInconsistencies. Supported values are [SolveInconsistencies, recomputeFastViewProjectionItems]"),
    (("/cassandra/mappings?action=Other", {}), "Invalid value supplied for query parameter 'action': Other. "
                                               "Supported values are [SolveInconsistencies]"),
    (("/mailboxes?task=SolveInconsistencies", {}), "Due to concurrency risks, a `I-KNOW-WHAT-I-M-DOING` header "
     "should be positioned to `ALL-SERVICES-ARE-OFFLINE` in order to prevent accidental calls. "
     "Check the documentation for details."),
    (("/mailboxes?task=SolveInconsistencies", {"I-KNOW-WHAT-I-M-DOING": "yes"}), "Due to concurrency risks"),
    (("/mailboxes?task=SolveInconsistencies&maxIterations=0", SAFE), "'maxIterations' must be strictly positive"),
    (("/mailboxes?task=SolveInconsistencies&autoMerge=maybe", SAFE), "'autoMerge' must be a boolean"),
    (("/mailboxes?task=SolveInconsistencies&autoMerge=true", SAFE), "'autoMerge=true' is not supported: ghost"),
    (("/messages?task=SolveInconsistencies&messagesPerSecond=abc", {}), 'For input string: "abc"'),
    (("/messages?task=SolveInconsistencies&messagesPerSecond=-1", {}), "'messagesPerSecond' must be strictly"),
    (("/mailboxes?task=RecomputeMailboxCounters&trustMessageProjection=1", {}),
     "'trustMessageProjection' must be a boolean"),
    (("/quota/users?task=RecomputeCurrentQuotas&usersPerSecond=0", {}), "'usersPerSecond' must be strictly"),
    (("/quota/users?task=RecomputeCurrentQuotas&quotaComponent=DISK", {}), "Invalid quotaComponent 'DISK'"),
    (("/messages?task=SolveInconsistencies&dryRun=yes", {}), "'dryRun' must be a boolean"),
])
def test_invalid_requests_are_400_and_start_nothing(client, airflow, request_, details):
    url, headers = request_
    body = error(client.post(url, headers=headers))
    assert (body["statusCode"], body["type"], body["message"]) == \
        (400, "InvalidArgument", "Invalid arguments supplied in the user request")
    assert body["details"].startswith(details), body
    assert airflow.triggered == [] and client.ctx.tasks.list() == []


def test_without_airflow_the_procedures_answer_503_after_validation():
    with webadmin(None) as (client, ctx):
        body = error(client.post("/messages?task=SolveInconsistencies"))
        assert (body["statusCode"], body["type"], body["message"]) == \
            (503, "ServerError", "Airflow is not configured on this server")
        assert "solve_message_inconsistencies" in body["details"] and "MAILSERVER_AIRFLOW_URL" in body["details"]
        # Validation still comes first: a bad request is a 400 whatever the configuration.
        assert error(client.post("/messages?task=SolveInconsistencies&messagesPerSecond=x"))["statusCode"] == 400
        assert error(client.post("/mailboxes?task=SolveInconsistencies"))["statusCode"] == 400
        assert ctx.tasks.list() == []


def test_without_airflow_the_schema_upgrade_runs_in_process():
    ran: list[int] = []
    with webadmin(None, ran) as (client, _):
        report = awaited(client, client.post("/cassandra/version/upgrade", content=b"13"))
        assert (report["type"], report["status"], report["additionalInformation"]["toVersion"]) == \
            ("cassandra-migration", "completed", 13)
        assert ran == [13]


@pytest.mark.parametrize(("url", "body", "target"), [("/cassandra/version/upgrade", b"13", 13),
                                                     ("/cassandra/version/upgrade/latest", None, 13)])
def test_with_airflow_the_schema_upgrade_is_a_run_of_the_migration_dag(airflow, url, body, target):
    ran: list[int] = []
    with webadmin(airflow, ran) as (client, _):
        report = awaited(client, client.post(url, content=body))
    assert (report["type"], report["status"]) == ("cassandra-migration", "completed")
    info = report["additionalInformation"]
    assert (info["toVersion"], info["dagId"]) == (target, "cassandra_schema_migration")
    run = airflow.triggered[-1]
    assert (run.dag_id, dict(run.conf)) == ("cassandra_schema_migration", {"target_version": target})
    assert ran == []   # nothing ran in-process


def test_the_procedures_are_published_in_openapi(client):
    paths = client.get("/openapi.json").json()["paths"]
    for path in ("/mailboxes", "/messages", "/cassandra/mappings", "/quota/users",
                 "/users/{username}/mailboxes", "/users/{username}/messages"):
        assert "post" in paths[path], path
