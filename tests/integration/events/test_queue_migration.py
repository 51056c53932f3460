"""``mailserver rabbitmq migrate-queues`` on the real broker: queues a previous version declared
(event bus without ``x-queue-version``, mail queues quorum by default) holding messages are listed
by the dry run, untouched by it, migrated with every message by ``--apply``, and found no more.

Each test has a vhost of its own, so the James names are the real ones and no other test's
queue can be listed or migrated.
"""

from __future__ import annotations

import io
import urllib.parse

import pika
import pytest

from mailserver.events.naming import BusNames
from mailserver.events.topology import BusTopology
from mailserver.queue.naming import QueueNames
from mailserver.rabbitmq_management import RabbitMQManagement
from mailserver.rabbitmq_migration import QueueMigration, temporary_queue
from mailserver.rabbitmq_queues import QueueType
from mailserver.runtime.queue_migration_cli import migrate_queues

pytestmark = pytest.mark.integration

BUS = BusNames()
SPOOL = QueueNames("spool")
GROUP, ORPHAN = "org.example.CountersListener", "org.example.RetiredListener"
CONFIGURED = QueueType()   # classic, x-queue-version 2


def declare_as_previous_version(ch) -> None:
    """The declarations before James's arguments: DLQs bare, work queues with their DLX only, spool quorum."""
    for exchange in (BUS.exchange, BUS.dead_letter_exchange, BUS.retry_exchange(GROUP), BUS.retry_exchange(ORPHAN),
                     SPOOL.exchange, SPOOL.dead_letter_exchange):
        ch.exchange_declare(exchange, exchange_type="direct", durable=True)
    dlx = {"x-dead-letter-exchange": BUS.dead_letter_exchange}
    ch.queue_declare(BUS.dead_letter_queue, durable=True)
    ch.queue_bind(BUS.dead_letter_queue, BUS.dead_letter_exchange, routing_key="")
    ch.queue_declare(BUS.shared_queue, durable=True, arguments=dlx)
    ch.queue_bind(BUS.shared_queue, BUS.exchange, routing_key="")
    ch.queue_declare(BUS.work_queue(GROUP), durable=True, arguments=dlx)
    ch.queue_bind(BUS.work_queue(GROUP), BUS.retry_exchange(GROUP), routing_key="")
    ch.queue_declare(BUS.work_queue(ORPHAN), durable=True, arguments=dlx)   # unbound: its group left
    ch.queue_declare(SPOOL.workqueue, durable=True,
                     arguments={"x-queue-type": "quorum", "x-dead-letter-exchange": SPOOL.dead_letter_exchange})
    ch.queue_bind(SPOOL.workqueue, SPOOL.exchange, routing_key="")
    ch.queue_declare(SPOOL.dead_letter_queue, durable=True)
    ch.queue_bind(SPOOL.dead_letter_queue, SPOOL.dead_letter_exchange, routing_key="")


MESSAGES = {BUS.dead_letter_queue: 3, BUS.shared_queue: 2, BUS.work_queue(GROUP): 2, BUS.work_queue(ORPHAN): 1,
            SPOOL.workqueue: 3, SPOOL.dead_letter_queue: 1}


def fill(ch) -> dict[str, list[tuple[bytes, dict]]]:
    ch.confirm_delivery()
    sent = {}
    for queue, count in MESSAGES.items():
        sent[queue] = [(f"{queue} #{i}".encode(), {"retry-count": i, "eventBusId": "previous"})
                       for i in range(count)]
        for body, headers in sent[queue]:
            ch.basic_publish("", queue, body, pika.BasicProperties(headers=headers, delivery_mode=2))
    return sent


def drain(ch, queue: str) -> list[tuple[bytes, dict]]:
    got = []
    while True:
        method, properties, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, properties.headers))


@pytest.fixture
def broker(vhost, stack):
    connection = pika.BlockingConnection(pika.URLParameters(vhost.amqp_url))
    management = RabbitMQManagement(stack.rabbitmq_management_url, vhost.amqp_url)
    try:
        yield connection.channel(), management, QueueMigration(vhost.amqp_url, management)
    finally:
        management.close()
        connection.close()


def run(migration: QueueMigration, apply: bool) -> tuple[int, str]:
    out = io.StringIO()
    status = migrate_queues(migration, CONFIGURED, apply, out=out)
    return status, out.getvalue()


def arguments_of(management: RabbitMQManagement) -> dict[str, dict]:
    return {q["name"]: q["arguments"] for q in management.queues(columns=("name", "arguments"))}


def bound_queues(management: RabbitMQManagement) -> set[tuple[str, str]]:
    vhost = urllib.parse.quote(management.vhost, safe="")
    return {(b["source"], b["destination"]) for b in management.get(f"/api/bindings/{vhost}") if b["source"]}


def test_dry_run_lists_and_changes_nothing_then_apply_migrates_every_message(broker, vhost):
    ch, management, migration = broker
    declare_as_previous_version(ch)
    sent = fill(ch)
    before = arguments_of(management)

    status, listing = run(migration, apply=False)

    assert status == 0
    assert all(f"{queue}: {count} messages, 0 consumers" in listing for queue, count in MESSAGES.items()), listing
    assert "dry run: 6 queues to migrate" in listing
    assert arguments_of(management) == before
    assert {q: ch.queue_declare(q, passive=True).method.message_count for q in MESSAGES} == MESSAGES

    status, report = run(migration, apply=True)

    assert status == 0, report
    after = arguments_of(management)
    assert after[BUS.dead_letter_queue] == {"x-queue-version": 2}
    assert after[BUS.shared_queue] == after[BUS.work_queue(ORPHAN)] == {
        "x-queue-version": 2, "x-dead-letter-exchange": BUS.dead_letter_exchange}
    assert after[SPOOL.workqueue] == {"x-queue-version": 2, "x-dead-letter-exchange": SPOOL.dead_letter_exchange}
    assert not [q for q in after if q.startswith("mailserver-upgrade-")]
    assert bound_queues(management) == {
        (BUS.dead_letter_exchange, BUS.dead_letter_queue), (BUS.exchange, BUS.shared_queue),
        (BUS.retry_exchange(GROUP), BUS.work_queue(GROUP)),    # the orphan stays unbound
        (SPOOL.exchange, SPOOL.workqueue), (SPOOL.dead_letter_exchange, SPOOL.dead_letter_queue)}
    BusTopology(vhost.amqp_url, BUS, CONFIGURED).declare_base(ch)   # the bus now starts on them
    assert {q: drain(ch, q) for q in MESSAGES} == sent                      # every message, in order

    assert run(migration, apply=True) == (0, "every event-bus and mail queue is declared as configured: "
                                             "nothing to migrate\n")


def test_refused_while_a_consumer_is_attached(broker):
    ch, management, migration = broker
    declare_as_previous_version(ch)
    fill(ch)
    before = arguments_of(management)
    ch.basic_consume(BUS.shared_queue, lambda *delivery: None)   # a node still running

    status, report = run(migration, apply=True)

    assert status == 1
    assert f"refused: consumers are attached to {BUS.shared_queue} (1)" in report
    assert arguments_of(management) == before


def test_a_run_interrupted_after_the_queue_was_deleted_is_finished(broker):
    ch, management, migration = broker
    declare_as_previous_version(ch)
    sent = fill(ch)
    # State after a crash between step 2 (queue emptied and deleted) and step 3.
    temporary = temporary_queue(BUS.shared_queue)
    ch.queue_declare(temporary, durable=True)
    ch.queue_bind(temporary, BUS.exchange, routing_key="")
    for body, headers in drain(ch, BUS.shared_queue):
        ch.basic_publish("", temporary, body, pika.BasicProperties(headers=headers, delivery_mode=2))
    ch.queue_delete(BUS.shared_queue)

    status, report = run(migration, apply=True)

    assert status == 0, report
    assert f"{BUS.shared_queue}: interrupted migration, 2 messages" in report
    assert (BUS.exchange, BUS.shared_queue) in bound_queues(management)
    assert temporary not in arguments_of(management)
    assert drain(ch, BUS.shared_queue) == sent[BUS.shared_queue]


def test_a_run_interrupted_in_the_middle_of_the_first_move_is_finished(broker):
    ch, management, migration = broker
    declare_as_previous_version(ch)
    sent = fill(ch)
    # State after a crash in step 2: the first message moved, the second still in the old queue.
    temporary = temporary_queue(BUS.dead_letter_queue)
    ch.queue_declare(temporary, durable=True, arguments={"x-queue-type": "classic"})
    ch.queue_bind(temporary, BUS.dead_letter_exchange, routing_key="")
    method, properties, body = ch.basic_get(BUS.dead_letter_queue, auto_ack=False)
    ch.basic_publish("", temporary, body, properties)
    ch.basic_ack(method.delivery_tag)

    status, report = run(migration, apply=True)

    assert status == 0, report
    assert f"{BUS.dead_letter_queue}: interrupted migration, 3 messages" in report
    assert arguments_of(management)[BUS.dead_letter_queue] == {"x-queue-version": 2}
    assert drain(ch, BUS.dead_letter_queue) == sent[BUS.dead_letter_queue]   # in order, no duplicate
