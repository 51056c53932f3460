"""Data for the event-bus procedures: dead letters in bulk, a bus topology in a vhost, and what the broker holds.

Dead letters are written with the driver's concurrent execution (thousands per second) in James's
tables; their events are real James JSON (``Added``), each with its own event id, so a test can
tell a message published twice from two messages. Queue contents are read over AMQP (exact) or
through the management API (what operators see; it lags by the statistics interval).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pika

from mailserver.cassandra.session import CassandraSession
from mailserver.events.naming import BusNames
from mailserver.events.topology import BusTopology
from mailserver.model.events import serialize_event
from mailserver.rabbitmq_management import RabbitMQManagement
from tests.support.events import sample_added

NAMES = BusNames()
INSERT_DEAD_LETTER = 'INSERT INTO event_dead_letters ("group", insertionid, event) VALUES (?, ?, ?)'
INSERT_GROUP = 'INSERT INTO group_table ("group") VALUES (?)'


def group_name(label: str) -> str:
    """A James-shaped group name (fully qualified class, ``$`` for the nested group class)."""
    return f"org.apache.james.test.{label}Listener${label}ListenerGroup"


@dataclass
class SeededDeadLetters:
    by_group: dict[str, dict[uuid.UUID, str]] = field(default_factory=dict)   # group -> insertion id -> event id

    def counts(self) -> dict[str, int]:
        return {g: len(letters) for g, letters in self.by_group.items()}

    @property
    def total(self) -> int:
        return sum(self.counts().values())

    def event_ids(self, group: str | None = None) -> set[str]:
        groups = [group] if group else list(self.by_group)
        return {e for g in groups for e in self.by_group[g].values()}


def seed_dead_letters(session: CassandraSession, counts: Mapping[str, int], *,
                      concurrency: int = 64) -> SeededDeadLetters:
    """``counts[group]`` dead letters per group, as the bus stores them (event row, then the group row)."""
    from cassandra.concurrent import execute_concurrent_with_args

    seeded = SeededDeadLetters()
    rows = []
    for group, n in counts.items():
        letters = seeded.by_group.setdefault(group, {})
        for i in range(n):
            event = sample_added(user=f"dl{i % 50}@example.com", uid=i + 1)
            insertion_id = uuid.uuid1()
            letters[insertion_id] = str(event.event_id)
            rows.append((group, insertion_id, serialize_event(event)))
    statement = session.prepare(INSERT_DEAD_LETTER)
    for result in execute_concurrent_with_args(session.session, statement, rows, concurrency=concurrency,
                                               raise_on_first_error=True):
        assert result.success
    for group in counts:
        session.execute(INSERT_GROUP, (group,))
    return seeded


def dead_letter_counts(session: CassandraSession) -> dict[str, int]:
    """Rows of ``event_dead_letters`` per group, read with CQL."""
    return dict(Counter(r["group"] for r in session.execute('SELECT "group" FROM event_dead_letters')))


def event_id_of(body: bytes | str) -> str:
    event = json.loads(body)
    (payload,) = event.values()
    return str(payload["eventId"])


# -- the broker --------------------------------------------------------------------------------------------

def declare_bus(amqp_url: str, groups: Iterable[str]) -> BusTopology:
    """What a node running ``groups`` declares: the bus's base objects and each group's retry path."""
    topology = BusTopology(amqp_url)
    topology.declare_base()
    topology.bind_groups(list(groups))
    return topology


def management_depth(management_url: str, amqp_url: str, queue: str) -> int | None:
    """The queue's ``messages`` as the management API shows it (refreshed every few seconds)."""
    management = RabbitMQManagement(management_url, amqp_url)
    vhost = urllib.parse.quote(management.vhost, safe="")
    try:
        info = management.get(f"/api/queues/{vhost}/{urllib.parse.quote(queue, safe='')}")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        raise
    return info.get("messages")


def take_all(amqp_url: str, queue: str) -> list[bytes]:
    """Every message of the queue, acknowledged (the queue ends empty)."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    bodies: list[bytes] = []
    try:
        channel = connection.channel()
        while True:
            method, _props, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                return bodies
            bodies.append(body)
    finally:
        if connection.is_open:
            connection.close()


def publish_raw(amqp_url: str, exchange: str, bodies: Iterable[str | bytes],
                headers: Mapping[str, Any] | None = None, *, routing_key: str = "") -> None:
    """Persistent, confirmed messages (as the bus's retry path publishes them)."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        props = pika.BasicProperties(delivery_mode=2, content_type="text/plain", headers=dict(headers or {}))
        for body in bodies:
            channel.basic_publish(exchange, routing_key, body, props, mandatory=True)
    finally:
        if connection.is_open:
            connection.close()


def delete_bus_objects(amqp_url: str, groups: Iterable[str]) -> None:
    """Remove the groups' queues and retry exchanges (test cleanup; the bus never deletes them itself)."""
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        for group in groups:
            channel.queue_delete(NAMES.work_queue(group))
            channel.exchange_delete(NAMES.retry_exchange(group))
    finally:
        if connection.is_open:
            connection.close()


def rabbitmq_connections(stack: Any, amqp_url: str) -> dict[str, str]:
    """``AIRFLOW_CONN_RABBITMQ_*`` for the vhost of ``amqp_url`` (as include/connections.py builds them)."""
    import dataclasses

    from include.connections import airflow_connections

    conns = airflow_connections(dataclasses.replace(stack, amqp_url=amqp_url))
    return {k: v for k, v in conns.items() if k.startswith("AIRFLOW_CONN_RABBITMQ_")}
