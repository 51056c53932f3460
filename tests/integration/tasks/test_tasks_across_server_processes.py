"""Distributed tasks between two real ``mailserver serve --roles webadmin,tasks`` processes on one keyspace.

A task submitted through node A's WebAdmin is read, awaited and canceled through node B's; when
the process executing a task is SIGKILLed, the other node fails that task visibly once its
heartbeat is older than ``MAILSERVER_TASKS_HEARTBEAT_TIMEOUT``.

The task is a real route's: ``POST /messages?task=SolveInconsistencies`` follows a DAG run in
Airflow, here a stand-in Airflow over HTTP (``tests.support.fake_airflow``) whose run stays
``running``, so the task stays ``inProgress`` as long as needed. Both nodes run tasks, so either
may execute it: assertions name the node from ``executedOn``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest

from mailserver.airflow.procedures import SOLVE_MESSAGE_INCONSISTENCIES
from mailserver.mailets.config import DEFAULT_FILE
from tests.e2e.mailflow.conftest import eventually
from tests.support.fake_airflow import FakeAirflow
from tests.support.mailserver_process import WEBADMIN_PASSWORD, IsolatedVhost, WebAdminProcess, server_env
from tests.unit.webadmin.webadmin_support import error

pytestmark = pytest.mark.integration

HEARTBEAT_INTERVAL, HEARTBEAT_TIMEOUT = 0.5, 10.0   # the timeout leaves room for a busy machine's pauses
DAG = SOLVE_MESSAGE_INCONSISTENCIES.dag_id
WAIT = 90.0


@dataclass
class Node:
    name: str
    server: WebAdminProcess
    http: httpx.Client


@dataclass
class Cluster:
    a: Node
    b: Node

    def node(self, name: str) -> Node:
        return next(n for n in (self.a, self.b) if n.name == name)

    def other(self, node: Node) -> Node:
        return self.b if node is self.a else self.a


@pytest.fixture(scope="module")
def airflow() -> Iterator[FakeAirflow]:
    with FakeAirflow() as fake:
        yield fake


@pytest.fixture(scope="module")
def nodes(stack, cassandra, cassandra_config, s3_blobs, airflow, tmp_path_factory) -> Iterator[Cluster]:
    tag = uuid.uuid4().hex[:8]
    logs = tmp_path_factory.mktemp("task-nodes")
    with IsolatedVhost(stack, f"task-nodes-{tag}") as vhost:
        started: list[Node] = []
        try:
            for letter in "ab":
                name = f"node-{letter}-{tag}"
                env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, s3_blobs.default_bucket.value,
                                 DEFAULT_FILE, MAILSERVER_ROLES="webadmin,tasks", MAILSERVER_NODE_NAME=name,
                                 MAILSERVER_TASKS_POLL_INTERVAL="0.2",
                                 MAILSERVER_TASKS_HEARTBEAT_INTERVAL=str(HEARTBEAT_INTERVAL),
                                 MAILSERVER_TASKS_HEARTBEAT_TIMEOUT=str(HEARTBEAT_TIMEOUT),
                                 **airflow.env(poll_interval=0.3))
                server = WebAdminProcess(env, logs / f"{name}.log").start()
                started.append(Node(name, server, httpx.Client(base_url=server.webadmin_url, timeout=WAIT + 30,
                                                               headers={"Password": WEBADMIN_PASSWORD})))
            yield Cluster(*started)
        finally:
            for node in started:
                node.http.close()
                node.server.terminate()


@pytest.fixture
def cluster(nodes: Cluster) -> Cluster:
    """Both nodes up (a node a previous test killed is started again, under the same name)."""
    for node in (nodes.a, nodes.b):
        process = node.server.process
        if process is None or process.poll() is not None:
            node.server.start()
    return nodes


def submit_on(node: Node) -> str:
    response = node.http.post("/messages", params={"task": "SolveInconsistencies"})
    assert response.status_code == 201, response.text
    task_id = response.json()["taskId"]
    assert response.headers["location"] == f"/tasks/{task_id}"
    return task_id


def running_report(node: Node, task_id: str) -> dict:
    """The report read through ``node`` once the task runs and its DAG run is seen running."""
    def probe() -> dict | None:
        report = node.http.get(f"/tasks/{task_id}").json()
        info = report.get("additionalInformation") or {}
        return report if report["status"] == "inProgress" and info.get("dagRunState") == "running" else None

    report = eventually(probe, timeout=WAIT, interval=0.2)
    assert report, node.http.get(f"/tasks/{task_id}").json()
    return report


def test_submitted_on_one_node_awaited_and_canceled_from_the_other(cluster: Cluster, airflow: FakeAirflow):
    a, b = cluster.a, cluster.b
    task_id = submit_on(a)

    running = running_report(b, task_id)
    assert (running["type"], running["submittedFrom"], running["cancelledFrom"]) == (
        SOLVE_MESSAGE_INCONSISTENCIES.task_type, a.name, None)
    assert running["executedOn"] in (a.name, b.name)
    run_id = running["additionalInformation"]["dagRunId"]
    assert airflow.run(DAG, run_id)["state"] == "running"
    assert task_id in {t["taskId"] for t in b.http.get("/tasks", params={"status": "inProgress"}).json()}
    assert error(b.http.get(f"/tasks/{task_id}/await", params={"timeout": "1s"})) == {
        "statusCode": 408, "type": "ServerError", "message": "The timeout has been reached", "details": None}

    canceled = b.http.delete(f"/tasks/{task_id}")
    assert (canceled.status_code, canceled.content) == (204, b"")
    awaited = b.http.get(f"/tasks/{task_id}/await", params={"timeout": f"{WAIT:.0f}s"})
    assert awaited.status_code == 200, awaited.text
    report = awaited.json()
    assert report["status"] == "canceled", report
    assert (report["submittedFrom"], report["executedOn"], report["cancelledFrom"]) == (
        a.name, running["executedOn"], b.name)
    assert "canceledDate" in report and "completedDate" not in report and "failedDate" not in report
    # The executing node stopped the DAG run it followed (Airflow's cancel: the run marked failed).
    assert airflow.run(DAG, run_id)["state"] == "failed"
    assert [c.body for c in airflow.calls_to("PATCH", run_id)] == [{"state": "failed"}]
    assert a.http.get(f"/tasks/{task_id}").json() == report   # one report, whichever node answers


def test_killing_the_executing_node_fails_its_task(cluster: Cluster, airflow: FakeAirflow):
    task_id = submit_on(cluster.a)
    running = running_report(cluster.b, task_id)
    executor = cluster.node(running["executedOn"])
    survivor = cluster.other(executor)

    executor.server.kill()   # SIGKILL: no shutdown, nothing recorded by the executor
    assert survivor.http.get(f"/tasks/{task_id}").json()["status"] == "inProgress"   # nobody can know yet

    awaited = survivor.http.get(f"/tasks/{task_id}/await", params={"timeout": f"{WAIT:.0f}s"})
    assert awaited.status_code == 200, awaited.text
    report = awaited.json()
    assert report["status"] == "failed", report
    assert (report["submittedFrom"], report["executedOn"], report["cancelledFrom"]) == (
        cluster.a.name, executor.name, None)
    assert "failedDate" in report and "completedDate" not in report and "canceledDate" not in report
    # The last details the dead node published are kept.
    assert report["additionalInformation"]["dagRunId"] == running["additionalInformation"]["dagRunId"]
    assert report["additionalInformation"]["dagRunState"] == "running"
    failed = {t["taskId"] for t in survivor.http.get("/tasks", params={"status": "failed"}).json()}
    assert task_id in failed
