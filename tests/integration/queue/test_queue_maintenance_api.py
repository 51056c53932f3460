"""What the queue maintenance jobs call on a ``DistributedMailQueue``, one entry at a time (RabbitMQ + Cassandra + S3).

``entry`` re-reads a view row and hides deleted ones, ``load`` sizes the content from the blobs,
``remove_entry`` is James's remove of one entry (optionally leaving the blobs to their new owner),
``republish_entry`` publishes the same enqueueId again, ``enqueue(enqueue_id=)`` enqueues a copy
that dequeue skips once any copy was processed, and ``flush(before_each=)`` is throttled.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

import pika
import pytest

from mailserver.queue.api import Outcome
from mailserver.queue.content import MimeMessageStore
from tests.contract.mail_queue_contract import SHORT, WAIT, make_mail
from tests.integration.queue.test_distributed_mail_queue import make_factory
from tests.support.clients import amqp_parameters
from tests.support.distributed_queue_cleanup import delete_rabbitmq_objects

pytestmark = pytest.mark.integration


@pytest.fixture
def queue(stack, cassandra, s3_blobs):
    factory = make_factory(stack, cassandra, s3_blobs)
    yield factory.get(f"q-{uuid.uuid4().hex[:12]}")
    factory.close()
    delete_rabbitmq_objects(stack, factory)


def purge(stack, queue_name: str) -> None:
    connection = pika.BlockingConnection(amqp_parameters(stack))
    try:
        connection.channel().queue_purge(queue_name)
    finally:
        connection.close()


def test_entry_load_and_remove_entry_keeping_the_blobs(queue, s3_blobs):
    mail = make_mail()
    queue.enqueue(mail)
    [view] = queue.view.browse_references()
    entry = queue.entry(view.time_range_start, view.bucket_id, view.enqueue_id)
    assert entry is not None and entry.mail.name == mail.name
    loaded = queue.load(entry)
    assert loaded.content.size == len(MimeMessageStore(s3_blobs).read(loaded.content)) > 0
    assert queue.remove_entry(entry, delete_content=False)
    assert not queue.remove_entry(entry)   # already deleted
    assert queue.entry(view.time_range_start, view.bucket_id, view.enqueue_id) is None
    assert list(queue.browse()) == []
    assert MimeMessageStore(s3_blobs).read(loaded.content)   # the blobs stay for their new owner
    assert queue.dequeue(timeout=SHORT) is None               # the broker message is skipped


def test_republish_entry_after_the_broker_lost_the_message(stack, queue):
    mail = make_mail()
    queue.enqueue(mail)
    [entry] = queue.view.browse_references()
    purge(stack, queue.names.workqueue)
    assert queue.dequeue(timeout=SHORT) is None
    assert queue.republish_entry(entry)
    item = queue.dequeue(timeout=WAIT)
    assert item is not None and item.enqueue_id == str(entry.enqueue_id) and item.mail.name == mail.name
    item.done(Outcome.SUCCESS)


def test_copies_under_one_enqueue_id_are_processed_once(queue):
    """A maintenance job enqueues again under a known id (a retried run may do it twice)."""
    mail = make_mail()
    copy_id = uuid.uuid4()
    queue.enqueue(mail, enqueue_id=copy_id)
    queue.enqueue(mail, enqueue_id=copy_id)
    first = queue.dequeue(timeout=WAIT)
    assert first.enqueue_id == str(copy_id)
    first.done(Outcome.SUCCESS)
    assert queue.dequeue(timeout=SHORT) is None   # the second copy is skipped: its id is marked deleted


def test_flush_runs_before_each_for_every_message(queue):
    for _ in range(3):
        queue.enqueue(make_mail(), delay=timedelta(minutes=10))
    calls = []
    assert queue.flush(before_each=lambda: calls.append(1)) == 3
    assert len(calls) >= 3
    names = set()
    for _ in range(3):
        item = queue.dequeue(timeout=WAIT)
        names.add(item.mail.name)
        item.done(Outcome.SUCCESS)
    assert len(names) == 3
