"""The vault restore Spark job through spark-submit, on James's tables (session keyspace) and S3.

Two users' deleted messages are put in the vault through the server's adapter, over two months;
the job restores the first user's entries whose subject contains "invoice". A dry run first lists
them and writes nothing (no restore mailbox, no event); the restore then brings exactly those into
the user's ``Restored-Messages`` (created and subscribed), byte-identical to the originals, with
their delivery dates as internal dates, one ``Added`` event each on the bus, and the vault keeps
every entry; the other user's and the non-matching entries are not restored. A second run restores
nothing new. Three spark-submits. The events go to a bus of this test only (its exchange and
queues are deleted at the end), so no server consuming the shared broker sees them.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pika
import pytest
from mailplatform.mail_queues import build_full_py_files

from mailserver.events.naming import BusNames
from mailserver.mailbox.subscriptions import CassandraSubscriptionStore
from mailserver.mailbox.wiring import cassandra_context
from mailserver.model.address import Username
from mailserver.model.event_json import deserialize_events
from mailserver.model.events import Added
from mailserver.model.mailbox import MailboxPath
from mailserver.vault.api import BlobStoreDeletedMessageVault
from mailserver.vault.cassandra import CassandraMetadataStore
from mailserver.vault.query import Query
from mailserver.vault.restore_id import restored_message_id
from tests.contract.vault_contract import deleted, fixed
from tests.support.maintenance import report_of, spark_submit

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "restore_deleted_messages"
LOCATION = "Restored-Messages"
MONTHS = [datetime(2026, 9, 14, tzinfo=UTC), datetime(2026, 10, 3, tzinfo=UTC)]
QUERY = {"combinator": "and", "criteria": [{"fieldName": "subject", "operator": "contains", "value": "invoice"}]}


def content(subject: str) -> bytes:
    """A message whose bytes a lossy copy would change: CRLF and a bare LF, 8-bit text, no final newline."""
    return (f"From: alice@example.com\r\nTo: bob@example.com\r\nSubject: {subject}\r\n"
            f"Content-Type: text/plain; charset=utf-8\r\n\r\nBody of {subject}\nh\u00e9 \u20ac\r\n--").encode()


def drain(amqp_url: str, queue: str) -> list:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel, events = connection.channel(), []
        while True:
            method, _, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                return events
            events.extend(deserialize_events(body))
    finally:
        connection.close()


def delete_bus(amqp_url: str, names: BusNames) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        channel = connection.channel()
        for queue in (names.shared_queue, names.dead_letter_queue):
            channel.queue_delete(queue)
        for exchange in (names.exchange, names.dead_letter_exchange):
            channel.exchange_delete(exchange)
    finally:
        connection.close()


@pytest.fixture
def bus(stack, unique):
    names = BusNames(f"restore-{unique}-{uuid.uuid4().hex[:6]}")
    yield names
    delete_bus(stack.amqp_url, names)


def test_restore_brings_back_exactly_the_matching_messages_once(stack, spark_env, cassandra, vault_s3, bus):
    session = cassandra
    tag = uuid.uuid4().hex[:8]
    alice, bob = Username.of(f"restore-a-{tag}@example.com"), Username.of(f"restore-b-{tag}@example.com")
    originals = {}
    for month, subjects in zip(MONTHS, (["invoice 1", "holiday", "Invoice 2"], ["invoice 3", "invoice 4"]),
                               strict=True):
        vault = BlobStoreDeletedMessageVault(CassandraMetadataStore(session), vault_s3, clock=fixed(month))
        for subject in subjects:
            message = deleted(alice, f"{subject} {tag}", delivered=month - timedelta(days=2), deleted_at=month)
            vault.append(message, content(message.subject))
            originals[message.message_id] = message
        other = deleted(bob, f"invoice 9 {tag}", deleted_at=month)
        vault.append(other, content(other.subject))
    wanted = {i: m for i, m in originals.items() if "invoice" in m.subject}   # "Invoice 2": contains is exact
    assert len(wanted) == 3
    env = {**spark_env, "S3_BUCKET_PREFIX": vault_s3.config.bucket_prefix,
           "S3_DEFAULT_BUCKET": vault_s3.config.default_bucket}
    args = ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--user", alice.value, "--query", json.dumps(QUERY), "--slices", "2",
            "--amqp-url", stack.amqp_url, "--bus", bus.bus]
    def submit(extra: list[str]):
        # As the DAG's operator ships it: the whole server package (the executors append through it).
        result = spark_submit(JOB, [*args, *extra], env, py_files=build_full_py_files)
        assert result.returncode == 0, result.stderr[-4000:]
        return report_of(result.stdout)

    manager = cassandra_context(session, vault_s3).manager
    target = MailboxPath.of(alice, LOCATION)

    report = submit(["--dry-run"])
    assert report["outcome"] == "DRY_RUN" and report["type"] == "deleted-messages-restore"
    assert report["detected"] == {"deleted-messages-2026-09-01": 1, "deleted-messages-2026-10-01": 2}
    assert {i["messageid"] for i in report["detectedItems"]} == {str(i) for i in wanted}
    assert report["matchingEntries"] == 3 and report["successfulRestoreCount"] == 0
    assert not manager.mailbox_exists(target)          # nothing written
    assert CassandraSubscriptionStore(session).subscriptions(alice) == []

    report = submit([])
    assert report["outcome"] == "COMPLETED", report
    assert (report["successfulRestoreCount"], report["errorRestoreCount"]) == (3, 0)
    assert report["remaining"] == {}
    restored = manager.get_messages(target)
    expected_ids = {restored_message_id(alice, i): m for i, m in wanted.items()}
    assert {m.message_id for m in restored} == set(expected_ids)
    for message in restored:
        original = expected_ids[message.message_id]
        assert manager.read_message(message.message_id) == content(original.subject)   # byte-identical
        stored = message.internal_date   # the store gives naive UTC datetimes back
        assert stored.replace(tzinfo=stored.tzinfo or UTC) == original.delivery_date
    assert LOCATION in CassandraSubscriptionStore(session).subscriptions(alice)
    assert not manager.mailbox_exists(MailboxPath.of(bob, LOCATION))
    events = drain(stack.amqp_url, bus.shared_queue)
    assert {m.message_id for e in events if isinstance(e, Added) for m in e.added} == set(expected_ids)
    vault = BlobStoreDeletedMessageVault(CassandraMetadataStore(session), vault_s3)
    assert {m.message_id for m in vault.search(alice, Query())} == set(originals)   # the vault keeps them

    report = submit([])
    assert report["outcome"] == "COMPLETED", report
    assert report["detected"] == {} and report["successfulRestoreCount"] == 0
    assert (report["matchingEntries"], report["alreadyRestoredEntries"]) == (3, 3)
    assert len(manager.get_messages(target)) == 3
