"""Tasks across two processes on one keyspace: submitted and awaited here, run in another process.

The other process (``worker_process.py``) runs only a TaskWorker, as a second node would. This
process submits, awaits and cancels through WebAdmin (Cassandra-backed task manager, no worker
for the test type), then SIGKILLs the other process in the middle of a task: the stale
heartbeat makes a worker here fail that task visibly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from mailserver.tasks.cassandra import CassandraTaskStore
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from mailserver.webadmin.app import create_app
from tests.contract.task_manager_contract import CountingTask, eventually
from tests.unit.webadmin.webadmin_support import FULL, make_context

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).with_name("worker_process.py")
REPO = Path(__file__).resolve().parents[3]
WAIT = 60.0
HEARTBEAT_TIMEOUT = 2.0


@pytest.fixture
def kind() -> str:
    return f"counting-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def other_node(cassandra_config, kind) -> Iterator[subprocess.Popen]:
    """node-b: a separate Python process running a TaskWorker for ``kind``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), "--hosts", ",".join(cassandra_config.hosts), "--port",
         str(cassandra_config.port), "--keyspace", cassandra_config.keyspace, "--node", "node-b", "--type", kind],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=env)
    try:
        line = process.stdout.readline() if process.stdout else ""
        if line.strip() != "ready":
            process.kill()
            pytest.fail(f"the worker process did not start: {line}{process.communicate(timeout=30)[1][-3000:]}")
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        if process.stdout:
            process.stdout.close()
        if process.stderr:
            process.stderr.close()


@pytest.fixture
def manager(cassandra) -> TaskManager:
    return TaskManager(CassandraTaskStore(cassandra), "node-a")


@pytest.fixture
def client(manager) -> TestClient:
    """WebAdmin of node-a: it reads and cancels tasks, it runs none."""
    return TestClient(create_app(make_context(tasks=manager)), headers={"Password": FULL},
                      raise_server_exceptions=False)


def status_of(client: TestClient, task_id: uuid.UUID) -> dict:
    return client.get(f"/tasks/{task_id}").json()


def test_submitted_here_run_there_awaited_and_canceled_here(client, manager, other_node, kind):
    done = manager.submit(CountingTask(kind, steps=3, pause=0.05))
    report = client.get(f"/tasks/{done}/await", params={"timeout": "60s"}).json()
    assert report["status"] == "completed", report
    assert (report["submittedFrom"], report["executedOn"]) == ("node-a", "node-b")
    assert report["additionalInformation"]["count"] == 3

    long = manager.submit(CountingTask(kind, steps=100_000, pause=0.01))
    eventually(lambda: (r := status_of(client, long))["status"] == "inProgress"
               and r["additionalInformation"]["count"] > 0, WAIT, "progress from node-b")
    assert client.delete(f"/tasks/{long}").status_code == 204
    report = client.get(f"/tasks/{long}/await", params={"timeout": "60s"}).json()
    assert report["status"] == "canceled", report
    assert (report["executedOn"], report["cancelledFrom"]) == ("node-b", "node-a")
    assert 0 < report["additionalInformation"]["count"] < 100_000
    assert other_node.poll() is None   # the other node survived all this


def test_a_killed_worker_process_fails_its_task(client, manager, cassandra, other_node, kind):
    task_id = manager.submit(CountingTask(kind, steps=100_000, pause=0.01))
    eventually(lambda: (r := status_of(client, task_id))["status"] == "inProgress"
               and r["additionalInformation"]["count"] > 0, WAIT, "node-b running the task")

    other_node.send_signal(signal.SIGKILL)
    other_node.wait(30)
    assert status_of(client, task_id)["status"] == "inProgress"   # nobody can know yet

    # Any live worker (here, one that cannot even run this type) notices the silent heartbeat.
    watcher = TaskWorker(CassandraTaskStore(cassandra), TaskRegistry(), "node-a", poll_interval=0.1,
                         heartbeat_interval=0.2, heartbeat_timeout=HEARTBEAT_TIMEOUT)
    with watcher:
        report = client.get(f"/tasks/{task_id}/await", params={"timeout": "60s"}).json()
    assert report["status"] == "failed", report
    assert report["executedOn"] == "node-b" and "failedDate" in report and "completedDate" not in report
    assert report["additionalInformation"]["count"] > 0   # the last progress node-b published
