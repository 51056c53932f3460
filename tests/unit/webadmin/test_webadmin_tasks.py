"""``/tasks``: James's report JSON, filters, await (408), cancel (204), error shapes."""

from __future__ import annotations

import uuid
import warnings

import pytest

from mailserver.webadmin.app import create_app
from tests.contract.task_manager_contract import CountingTask, eventually
from tests.unit.webadmin.task_support import COUNTING, NODE, task_context
from tests.unit.webadmin.webadmin_support import FULL, NODELETE, READONLY, error, make_context

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient


@pytest.fixture
def ctx():
    with task_context() as context:
        yield context


def submit(ctx, **kwargs) -> str:
    return str(ctx.tasks.submit(CountingTask(COUNTING, **kwargs)))


def test_report_of_a_completed_task(client, ctx):
    task_id = submit(ctx, steps=2)
    report = client.get(f"/tasks/{task_id}/await").json()
    assert report["taskId"] == task_id and report["type"] == COUNTING and report["status"] == "completed"
    assert report["submittedFrom"] == NODE and report["executedOn"] == NODE and report["cancelledFrom"] is None
    assert {"submitDate", "startedDate", "completedDate"} <= set(report)
    assert not {"failedDate", "canceledDate"} & set(report)
    assert report["submitDate"].endswith("+0000") and len(report["submitDate"]) == len("2024-05-02T10:15:24.805+0000")
    info = report["additionalInformation"]
    assert info["type"] == COUNTING and info["count"] == 2 and info["timestamp"].endswith("Z")
    assert client.get(f"/tasks/{task_id}").json() == report


def test_listing_filters(client, ctx):
    done = submit(ctx)
    client.get(f"/tasks/{done}/await")
    running = submit(ctx, steps=2000, pause=0.01)
    eventually(lambda: client.get(f"/tasks/{running}").json()["status"] == "inProgress")
    listed = client.get("/tasks").json()
    assert [t["taskId"] for t in listed] == [running, done]   # newest first
    assert [t["taskId"] for t in client.get("/tasks?status=completed").json()] == [done]
    assert [t["taskId"] for t in client.get("/tasks?status=INPROGRESS").json()] == [running]
    assert client.get("/tasks?status=failed").json() == []
    assert [t["taskId"] for t in client.get(f"/tasks?type={COUNTING}&limit=1").json()] == [running]
    assert [t["taskId"] for t in client.get("/tasks?offset=1").json()] == [done]
    assert client.get("/tasks?type=other").json() == []
    assert len(client.get("/tasks", params={"submittedBefore": "2999-01-01T00:00:00+00:00"}).json()) == 2
    assert client.get("/tasks", params={"submittedAfter": "2999-01-01T00:00:00+01:00"}).json() == []
    after = client.get("/tasks", params={"completedAfter": "2000-01-01T00:00:00.000001+07:00"}).json()
    assert [t["taskId"] for t in after] == [done]   # the running task has no completedDate
    client.delete(f"/tasks/{running}")


@pytest.mark.parametrize(("query", "message"), [
    ("status=unknown", "Invalid status query parameter"),
    ("limit=0", "limit can not be equal to zero"),
    ("offset=-1", "offset can not be negative"),
    ("limit=x", "Can not parse limit"),
    ("startedBefore=yesterday", "Invalid arguments supplied in the user request"),
    ("failedAfter=2024-01-01T00:00:00", "Invalid arguments supplied in the user request"),   # no offset
])
def test_listing_errors(client, query, message):
    body = error(client.get(f"/tasks?{query}"))
    assert (body["statusCode"], body["type"], body["message"]) == (400, "InvalidArgument", message)


def test_unknown_and_invalid_task_ids(client):
    unknown = str(uuid.uuid4())
    body = error(client.get(f"/tasks/{unknown}"))
    assert (body["statusCode"], body["type"], body["message"]) == (404, "notFound", f"{unknown} can not be found")
    body = error(client.get("/tasks/not-a-uuid"))
    assert (body["statusCode"], body["type"], body["message"]) == (400, "InvalidArgument", "Invalid task id")
    body = error(client.get(f"/tasks/{unknown}/await"))
    assert (body["statusCode"], body["type"], body["message"]) == (404, "ServerError", "The taskId is not found")
    assert error(client.get("/tasks/nope/await"))["message"] == "Invalid task id"
    assert client.delete(f"/tasks/{unknown}").status_code == 204   # James does not check the id exists
    assert error(client.delete("/tasks/nope"))["statusCode"] == 400


def test_await_timeout_is_408_and_cancel_is_204(client, ctx):
    task_id = submit(ctx, steps=5000, pause=0.01)
    body = error(client.get(f"/tasks/{task_id}/await?timeout=100ms"))
    assert (body["statusCode"], body["type"], body["message"]) == (408, "ServerError", "The timeout has been reached")
    eventually(lambda: client.get(f"/tasks/{task_id}").json()["status"] == "inProgress")
    response = client.delete(f"/tasks/{task_id}")
    assert (response.status_code, response.content) == (204, b"")
    report = client.get(f"/tasks/{task_id}/await?timeout=30").json()
    assert report["status"] == "canceled" and report["cancelledFrom"] == NODE and "canceledDate" in report
    assert report["additionalInformation"]["count"] < 5000


@pytest.mark.parametrize(("timeout", "details"), [
    ("abc", "The supplied String is not a supported format abc"),
    ("-5", "The supplied String is not a supported format -5"),
    ("3 fortnights", "Unknown unit: fortnights"),
    ("366d", "Timeout should not exceed 365 days"),
])
def test_await_invalid_timeouts(client, ctx, timeout, details):
    task_id = submit(ctx)
    body = error(client.get(f"/tasks/{task_id}/await", params={"timeout": timeout}))
    assert (body["statusCode"], body["message"], body["details"]) == (400, "Invalid timeout", details)


def test_cancel_of_a_waiting_task_is_immediate(client, ctx):
    ctx.tasks.submit(CountingTask(COUNTING, steps=3000, pause=0.01))   # keeps the single worker slot busy
    task_id = submit(ctx)
    assert client.delete(f"/tasks/{task_id}").status_code == 204
    report = client.get(f"/tasks/{task_id}").json()
    assert report["status"] == "canceled" and "startedDate" not in report
    for t in client.get("/tasks?status=inProgress").json():
        client.delete(f"/tasks/{t['taskId']}")


def test_password_classes(app, ctx):
    task_id = submit(ctx)
    readonly = TestClient(app, headers={"Password": READONLY}, raise_server_exceptions=False)
    nodelete = TestClient(app, headers={"Password": NODELETE}, raise_server_exceptions=False)
    assert readonly.get(f"/tasks/{task_id}/await").status_code == 200
    assert readonly.delete(f"/tasks/{task_id}").status_code == 403
    assert nodelete.delete(f"/tasks/{task_id}").status_code == 403


def test_task_metrics_are_exposed(client, ctx):
    client.get(f"/tasks/{submit(ctx)}/await")
    text = client.get("/metrics").text
    assert f'tasks_total{{status="completed",type="{COUNTING}"}} 1.0' in text


def test_no_task_routes_without_a_task_manager():
    plain = TestClient(create_app(make_context()), headers={"Password": FULL}, raise_server_exceptions=False)
    body = error(plain.get("/tasks"))
    assert (body["statusCode"], body["message"]) == (404, "GET /tasks can not be found")
    assert error(plain.get("/mailQueues"))["statusCode"] == 404
    assert error(plain.get("/mailRepositories"))["statusCode"] == 404
    assert error(plain.get("/cassandra/version"))["statusCode"] == 404
