"""WebAdmin's event-bus routes on the real stack: Cassandra dead letters, the RabbitMQ bus on a vhost of its own.

* a listener that fails until it is fixed: its dead letter is listed and shown over HTTP,
  redelivered by the ``event-dead-letters-redeliver-group`` task (run by a worker on the
  Cassandra task store), handled, and gone from ``event_dead_letters`` (CQL);
* ``POST /events/groups?action=reset`` binds a required group RabbitMQ lacks and unbinds one no
  node requires, whose queue stays with its messages (read back through the management API).
"""

from __future__ import annotations

import threading
import urllib.parse
import uuid
import warnings
from collections.abc import Iterator

import pika
import pytest

from mailserver.events.api import EventListener
from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.events.rabbitmq import RabbitMQEventBus
from mailserver.events.registered_groups import RegisteredGroups
from mailserver.events.required_groups import RequiredGroups, RequireGroups
from mailserver.events.retry import RetryPolicy
from mailserver.eventsourcing.memory import MemoryEventStore
from mailserver.model.events import MailboxEvent
from mailserver.rabbitmq_management import RabbitMQManagement
from mailserver.tasks.builtin.registration import EventBusParts
from mailserver.tasks.cassandra import CassandraTaskStore
from mailserver.tasks.wiring import TaskServices, TaskSettings, build
from mailserver.webadmin.app import create_app
from tests.support.events import eventually, sample_added
from tests.unit.webadmin.webadmin_support import FULL, make_context

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

pytestmark = pytest.mark.integration

FAST = RetryPolicy(max_retries=1, first_backoff=0.01, jitter_factor=0.1)


def group(name: str) -> str:
    return f"org.apache.james.test.{name}{uuid.uuid4().hex[:8]}${name}Group"


class Fixable(EventListener):
    """Fails every event until ``fixed`` is set (a listener bug, then its fix)."""

    def __init__(self, group_name: str) -> None:
        self.group = group_name
        self.fixed = False
        self.handled: list[MailboxEvent] = []
        self.failures = 0
        self._lock = threading.Lock()

    def handle(self, event: MailboxEvent) -> None:
        with self._lock:
            if not self.fixed:
                self.failures += 1
                raise RuntimeError("listener bug")
            self.handled.append(event)


def services(cassandra, event_bus: EventBusParts) -> TaskServices:
    return build(CassandraTaskStore(cassandra), TaskSettings(f"node-{uuid.uuid4().hex[:6]}", poll_interval=0.1,
                                                             heartbeat_interval=0.2), event_bus=event_bus)


def await_task(client: TestClient, response) -> dict:
    assert response.status_code == 201, response.text
    return client.get(f"/tasks/{response.json()['taskId']}/await?timeout=60").json()


@pytest.fixture
def bus(vhost, cassandra) -> Iterator[RabbitMQEventBus]:
    bus = RabbitMQEventBus(vhost.amqp_url, CassandraEventDeadLetters(cassandra), retry=FAST, concurrency=2)
    yield bus
    bus.close()


def test_a_dead_letter_is_listed_redelivered_by_the_task_and_gone_from_cassandra(bus, cassandra):
    listener = Fixable(group("Fixable"))
    bus.register(listener)
    bus.start()
    event = sample_added()
    bus.dispatch(event)
    dead_letters = bus.dead_letters
    eventually(lambda: dead_letters.insertion_ids(listener.group))
    assert listener.failures == FAST.max_retries + 1

    tasks = services(cassandra, EventBusParts(dead_letters, bus))
    client = TestClient(create_app(make_context(tasks=tasks.manager, dead_letters=dead_letters, bus=bus)),
                        headers={"Password": FULL}, raise_server_exceptions=False)
    encoded = urllib.parse.quote(listener.group, safe="")
    with tasks.worker:
        assert listener.group in client.get("/events/deadLetter/groups").json()
        [insertion_id] = client.get(f"/events/deadLetter/groups/{encoded}").json()
        shown = client.get(f"/events/deadLetter/groups/{encoded}/{insertion_id}").json()
        assert shown["Added"]["eventId"] == str(event.event_id)

        listener.fixed = True
        report = await_task(client, client.post(f"/events/deadLetter/groups/{encoded}?action=reDeliver"))

    assert (report["type"], report["status"]) == ("event-dead-letters-redeliver-group", "completed"), report
    info = report["additionalInformation"]
    assert (info["successfulRedeliveriesCount"], info["failedRedeliveriesCount"], info["group"]) == \
        (1, 0, listener.group)
    eventually(lambda: listener.handled)
    assert [e.event_id for e in listener.handled] == [event.event_id]
    rows = cassandra.execute('SELECT insertionId FROM event_dead_letters WHERE "group" = ?', (listener.group,))
    assert list(rows) == []
    assert client.get(f"/events/deadLetter/groups/{encoded}").json() == []
    assert client.get(f"/events/deadLetter/groups/{encoded}/{insertion_id}").status_code == 404


def test_groups_reset_binds_the_missing_and_unbinds_the_unrequired_keeping_its_queue(vhost, bus, cassandra):
    topology, names = bus.topology, bus.names
    registered = RegisteredGroups(RabbitMQManagement(vhost.stack.rabbitmq_management_url, vhost.amqp_url), names)
    required = RequiredGroups(MemoryEventStore())
    wanted, removed = group("Wanted"), group("Removed")
    required.require(RequireGroups.of([wanted, removed], "node-1"))
    topology.bind_groups([removed])
    required.require(RequireGroups.of([wanted], "node-2"))   # a later node no longer runs `removed`
    connection = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
    try:
        channel = connection.channel()
        for i in range(3):   # messages waiting for the group that goes away
            channel.basic_publish(names.retry_exchange(removed), "", f"m{i}".encode())
    finally:
        connection.close()
    eventually(lambda: {q.group: q.messages for q in registered.state(required.current()).queues}.get(removed) == 3)

    tasks = services(cassandra, EventBusParts(bus.dead_letters, bus, required, registered, topology))
    client = TestClient(create_app(make_context(tasks=tasks.manager, required_groups=required,
                                                registered_groups=registered, topology=topology)),
                        headers={"Password": FULL}, raise_server_exceptions=False)
    before = client.get("/events/groups").json()
    assert (before["missing"], before["unexpected"]) == ([wanted], [removed])
    assert [(c["type"], c["group"], c["host"]) for c in before["audit"]][-1] == \
        ("RequiredGroupRemoved", removed, "node-2")
    with tasks.worker:
        report = await_task(client, client.post("/events/groups?action=reset"))

    assert (report["type"], report["status"]) == ("event-bus-groups-reset", "completed"), report
    info = report["additionalInformation"]
    assert (info["boundGroups"], info["unboundGroups"]) == ([wanted], [removed])
    assert info["orphanQueues"] == [{"group": removed, "queue": names.work_queue(removed), "messages": 3,
                                     "consumers": 0}]
    after = client.get("/events/groups").json()
    assert (after["registered"], after["missing"], after["unexpected"]) == ([wanted], [], [])
    assert [q["group"] for q in after["orphanQueues"]] == [removed]   # kept, with its messages
