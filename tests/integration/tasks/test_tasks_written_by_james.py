"""Tasks shared with James nodes: a task James wrote is listed, read, awaited and canceled through our
WebAdmin, and one of ours is written as James parses it. James's rows are James's samples
(TaskEventsSerializationTest, CassandraTaskExecutionDetailsProjectionDAO's insert)."""

from __future__ import annotations

import json
import uuid
import warnings
from datetime import UTC, datetime

import pytest

from mailserver.tasks.manager import TaskManager
from mailserver.tasks.wiring import cassandra_task_store
from mailserver.webadmin.app import create_app
from tests.contract.task_manager_contract import CountingTask
from tests.unit.webadmin.webadmin_support import FULL, make_context

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration

OUR_NODE, JAMES_NODE = "our-node", "foo"
COUNTER = {"type": "memory-reference-task-with-counter", "count": 3, "timestamp": "2018-11-13T12:00:55Z"}
SUBMITTED = datetime(2018, 11, 13, 12, 0, 50, 123000, tzinfo=UTC)
STARTED = datetime(2018, 11, 13, 12, 0, 51, tzinfo=UTC)
ENDED = datetime(2018, 11, 13, 12, 0, 55, tzinfo=UTC)
CREATED_JSON = ('{"task":{"type":"completed-task"},"type":"task-manager-created","aggregate":"%s","event":%d,'
                '"hostname":"foo"}')
STARTED_JSON = '{"aggregate":"%s","event":%d,"type":"task-manager-started","hostname":"foo"}'
COMPLETED_JSON = ('{"result":"COMPLETED","aggregate":"%s","event":%d,"type":"task-manager-completed",'
                  '"additionalInformation":{"type":"memory-reference-task-with-counter","count":3,'
                  '"timestamp":"2018-11-13T12:00:55Z"}}')
CANCELLED_JSON = '{"aggregate":"%s","event":%d,"type":"task-manager-cancelled"}'
# James's event DTOs, field by field: Jackson refuses any other key.
JAMES_FIELDS = {"task-manager-created": {"type", "aggregate", "event", "task", "hostname"},
                "task-manager-started": {"type", "aggregate", "event", "hostname"},
                "task-manager-cancel-requested": {"type", "aggregate", "event", "hostname"},
                "task-manager-completed": {"type", "aggregate", "event", "result", "additionalInformation"},
                "task-manager-failed": {"type", "aggregate", "event", "additionalInformation", "errorMessage",
                                        "exception"},
                "task-manager-cancelled": {"type", "aggregate", "event", "additionalInformation"},
                "task-manager-updated": {"type", "aggregate", "event", "additionalInformation"}}
JAMES_STATUSES = {"waiting", "inProgress", "canceledRequested", "completed", "canceled", "failed"}


@pytest.fixture(scope="module")
def client(cassandra):
    ctx = make_context(tasks=TaskManager(cassandra_task_store(cassandra), OUR_NODE))
    return TestClient(create_app(ctx), headers={"Password": FULL}, raise_server_exceptions=False)


def james_appends(cassandra, task_id: uuid.UUID, *events: str) -> None:
    """Events as James's EventStoreDao inserts them, numbered after those already there."""
    first = len(cassandra.execute("SELECT eventId FROM eventStore WHERE aggregateId = ?", (f"Task/{task_id}",)))
    for offset, event in enumerate(events):
        cassandra.execute("INSERT INTO eventStore (aggregateId, eventId, event) VALUES (?, ?, ?) IF NOT EXISTS",
                          (f"Task/{task_id}", first + offset, event % (task_id, first + offset)))


def james_projects(cassandra, task_id: uuid.UUID, status: str, **columns) -> None:
    """The projection row as James's DAO inserts it (absent values unset, dates in James's zone)."""
    values = {"taskID": task_id, "type": "completed-task", "status": status,
              "submittedDate": (SUBMITTED, "Europe/Paris"), "submittedNode": JAMES_NODE, **columns}
    cassandra.execute(f"INSERT INTO taskExecutionDetailsProjection ({', '.join(values)}) "
                      f"VALUES ({', '.join('?' for _ in values)})", tuple(values.values()))


def test_a_task_james_completed_is_listed_read_and_awaited(cassandra, client):
    task_id = uuid.uuid4()
    james_appends(cassandra, task_id, CREATED_JSON, STARTED_JSON, COMPLETED_JSON)
    james_projects(cassandra, task_id, "completed", startedDate=(STARTED, "Europe/Paris"), ranNode=JAMES_NODE,
                   completedDate=(ENDED, "Europe/Paris"), additionalInformation=json.dumps(COUNTER))

    report = client.get(f"/tasks/{task_id}").json()
    assert report == {"taskId": str(task_id), "type": "completed-task", "status": "completed",
                      "submittedFrom": JAMES_NODE, "executedOn": JAMES_NODE, "cancelledFrom": None,
                      "submitDate": "2018-11-13T12:00:50.123+0000", "startedDate": "2018-11-13T12:00:51.000+0000",
                      "completedDate": "2018-11-13T12:00:55.000+0000", "additionalInformation": COUNTER}
    assert report in client.get("/tasks?status=completed").json()
    assert client.get(f"/tasks/{task_id}/await").json() == report


def test_a_running_james_task_is_canceled_from_our_node(cassandra, client):
    task_id = uuid.uuid4()
    james_appends(cassandra, task_id, CREATED_JSON, STARTED_JSON)
    james_projects(cassandra, task_id, "inProgress", startedDate=(STARTED, "UTC"), ranNode=JAMES_NODE)
    assert [t["taskId"] for t in client.get("/tasks?status=inProgress").json()].count(str(task_id)) == 1
    assert client.get(f"/tasks/{task_id}/await?timeout=0").status_code == 408

    assert client.delete(f"/tasks/{task_id}").status_code == 204

    report = client.get(f"/tasks/{task_id}").json()
    assert (report["status"], report["cancelledFrom"], report["executedOn"]) == ("canceledRequested", OUR_NODE,
                                                                                JAMES_NODE)
    request = cassandra.one("SELECT event FROM eventStore WHERE aggregateId = ? AND eventId = 2",
                            (f"Task/{task_id}",))
    assert json.loads(request["event"]) == {"type": "task-manager-cancel-requested", "aggregate": str(task_id),
                                            "event": 2, "hostname": OUR_NODE}
    # James's worker sees the request and ends the task.
    james_appends(cassandra, task_id, CANCELLED_JSON)
    james_projects(cassandra, task_id, "canceled", startedDate=(STARTED, "UTC"), ranNode=JAMES_NODE,
                   cancelRequestedNode=OUR_NODE, canceledDate=(ENDED, "UTC"))
    assert client.get(f"/tasks/{task_id}/await").json()["status"] == "canceled"


def test_one_of_ours_reads_back_as_james_parses_it(cassandra, client):
    store = cassandra_task_store(cassandra)
    manager = TaskManager(store, OUR_NODE)
    task_id = manager.submit(CountingTask(f"counting-{uuid.uuid4().hex[:8]}", steps=2))
    assert client.delete(f"/tasks/{task_id}").status_code == 204

    rows = cassandra.execute("SELECT eventId, event FROM eventStore WHERE aggregateId = ?", (f"Task/{task_id}",))
    events = [json.loads(r["event"]) for r in rows]
    assert [e["type"] for e in events] == ["task-manager-created", "task-manager-cancel-requested",
                                           "task-manager-cancelled"]
    for row, event in zip(rows, events, strict=True):
        assert set(event) <= JAMES_FIELDS[event["type"]]
        assert (event["aggregate"], event["event"]) == (str(task_id), row["eventid"])
    assert events[0]["task"]["type"] == manager.get(task_id).type and events[0]["hostname"] == OUR_NODE
    projection = cassandra.one("SELECT * FROM taskExecutionDetailsProjection WHERE taskId = ?", (task_id,))
    assert projection["status"] in JAMES_STATUSES and projection["status"] == "canceled"
    assert projection["submitteddate"][1] == "UTC" and projection["canceleddate"][0] is not None
    information = json.loads(projection["additionalinformation"])
    assert information["type"] == events[0]["task"]["type"] and information["timestamp"].endswith("Z")
