"""``DELETE /tasks?olderThan=<duration>`` (James's ``tasks-cleanup``) on the memory task store.

Finished tasks submitted before the horizon are forgotten, so are tasks silent since then (a node
died running or before claiming them); recent tasks and running tasks with a fresh heartbeat stay.
"""

from __future__ import annotations

import uuid
import warnings
from datetime import timedelta

import pytest

from mailserver.tasks.api import TaskExecutionDetails, TaskStatus, utc_now
from mailserver.tasks.builtin.tasks_cleanup import TasksCleanupTask, removable
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.wiring import TaskSettings, build
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

NOW = utc_now()
DAY = timedelta(days=1)


def details(status: TaskStatus, submitted_ago: timedelta, *, started_ago: timedelta | None = None,
            heartbeat_ago: timedelta | None = None) -> TaskExecutionDetails:
    return TaskExecutionDetails(
        uuid.uuid4(), "counting", status, NOW - submitted_ago, "node",
        started_date=None if started_ago is None else NOW - started_ago,
        heartbeat=None if heartbeat_ago is None else NOW - heartbeat_ago,
        completed_date=NOW - submitted_ago if status is TaskStatus.COMPLETED else None)


@pytest.mark.parametrize(("task", "removed"), [
    (details(TaskStatus.COMPLETED, 3 * DAY), True),
    (details(TaskStatus.FAILED, 3 * DAY), True),
    (details(TaskStatus.CANCELLED, 3 * DAY), True),
    (details(TaskStatus.COMPLETED, DAY / 2), False),                      # submitted after the horizon
    (details(TaskStatus.WAITING, 3 * DAY), True),                         # never claimed: silent since then
    (details(TaskStatus.IN_PROGRESS, 3 * DAY, started_ago=3 * DAY, heartbeat_ago=2 * DAY), True),   # dead node
    (details(TaskStatus.IN_PROGRESS, 3 * DAY, started_ago=3 * DAY, heartbeat_ago=timedelta(seconds=2)), False),
    (details(TaskStatus.CANCEL_REQUESTED, 3 * DAY, started_ago=3 * DAY, heartbeat_ago=timedelta(seconds=2)), False),
])
def test_what_the_cleanup_forgets(task, removed):
    assert removable(task, NOW - DAY) is removed


def test_the_task_removes_and_counts():
    store = MemoryTaskStore()
    old_done, old_running, recent = (details(TaskStatus.COMPLETED, 3 * DAY),
                                     details(TaskStatus.IN_PROGRESS, 3 * DAY, heartbeat_ago=timedelta(seconds=1)),
                                     details(TaskStatus.FAILED, DAY / 2))
    for d in (old_done, old_running, recent):
        store.add(d)
    task = TasksCleanupTask(store, NOW - DAY)
    assert task.run().value == "COMPLETED"
    assert {d.task_id for d in store.list()} == {old_running.task_id, recent.task_id}
    info = task.additional_information()
    assert (info["removedTaskCount"], info["processedTaskCount"]) == (1, 2)
    assert info["olderThan"].endswith("Z")
    rebuilt = TaskRegistry()
    from mailserver.tasks.builtin import tasks_cleanup

    tasks_cleanup.register(rebuilt, store)
    again = rebuilt.create(TasksCleanupTask.type, task.parameters())
    assert again.older_than == task.older_than


@pytest.fixture
def cleanup_client():
    store = MemoryTaskStore()
    services = build(store, TaskSettings(node="n1", poll_interval=0.02, heartbeat_interval=0.05))
    ctx = make_context(tasks=services.manager)
    services.worker.start()
    try:
        yield TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False), store
    finally:
        services.worker.stop()


def test_route_submits_a_tasks_cleanup_task(cleanup_client):
    client, store = cleanup_client
    old = details(TaskStatus.COMPLETED, 3 * DAY)
    store.add(old)
    response = client.delete("/tasks", params={"olderThan": "1d"})
    assert response.status_code == 201
    task_id = response.json()["taskId"]
    assert response.headers["Location"] == f"/tasks/{task_id}"
    report = client.get(f"/tasks/{task_id}/await", params={"timeout": "10s"}).json()
    assert report["type"] == "tasks-cleanup" and report["status"] == "completed"
    info = report["additionalInformation"]
    assert (info["removedTaskCount"], info["processedTaskCount"]) == (1, 1)
    assert client.get(f"/tasks/{old.task_id}").status_code == 404
    assert client.get(f"/tasks/{task_id}").status_code == 200   # the cleanup itself is recent: kept


@pytest.mark.parametrize("query", [{}, {"olderThan": ""}, {"olderThan": "one day"}, {"olderThan": "3light-years"},
                                   {"olderThan": "9" * 30}, {"olderThan": "5000 years"}])
def test_route_refuses_a_missing_or_invalid_duration(cleanup_client, query):
    client, _ = cleanup_client
    response = client.delete("/tasks", params=query)
    assert response.status_code == 400
    assert "olderThan" in error(response)["details"]


def test_a_bare_number_is_seconds(cleanup_client):
    client, store = cleanup_client
    store.add(details(TaskStatus.COMPLETED, timedelta(minutes=2)))
    task_id = client.delete("/tasks", params={"olderThan": "60"}).json()["taskId"]
    report = client.get(f"/tasks/{task_id}/await", params={"timeout": "10s"}).json()
    assert report["additionalInformation"]["removedTaskCount"] == 1


def test_manager_keeps_the_store():
    store = MemoryTaskStore()
    assert TaskManager(store, "n").store is store
