"""The mail-queue contract on RabbitMQ + Cassandra + S3, plus what only the distributed queue does."""

from __future__ import annotations

import json
import time
import urllib.parse
import uuid
from datetime import UTC, datetime, timedelta

import pika
import pytest

from mailserver.model.mail import MailContent
from mailserver.queue.api import MailQueueError, Outcome
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.rabbitmq import DistributedMailQueueFactory
from mailserver.queue.serialization import MailReference, serialize_reference
from mailserver.queue.view import slice_start
from tests.contract.mail_queue_contract import RAW, SHORT, WAIT, MailQueueContract, make_mail
from tests.support.clients import amqp_parameters, rabbitmq_management
from tests.support.distributed_queue_cleanup import delete_rabbitmq_objects

pytestmark = pytest.mark.integration


def make_factory(stack, cassandra, s3_blobs, **kwargs) -> DistributedMailQueueFactory:
    return DistributedMailQueueFactory(stack.amqp_url, cassandra, s3_blobs,
                                       management_url=stack.rabbitmq_management_url, **kwargs)


@pytest.fixture
def factories(stack):
    """Every factory a test makes; their connections are closed and their RabbitMQ objects deleted."""
    made = []
    yield made
    for factory in made:
        factory.close()
    for factory in made:
        delete_rabbitmq_objects(stack, factory)


@pytest.fixture
def another(stack, cassandra, s3_blobs, factories):
    """A second factory on the same services: another process of the cluster."""
    def build(**kwargs):
        factory = make_factory(stack, cassandra, s3_blobs, **kwargs)
        factories.append(factory)
        return factory
    return build


def vhost_path(stack) -> str:
    return urllib.parse.quote(amqp_parameters(stack).virtual_host, safe="")


def raw_get_all(stack, queue_name: str) -> list[tuple[object, bytes]]:
    """(properties, body) of every message of a RabbitMQ queue, left in place (requeued on close)."""
    connection = pika.BlockingConnection(amqp_parameters(stack))
    try:
        channel = connection.channel()
        out = []
        while True:
            method, props, body = channel.basic_get(queue_name, auto_ack=False)
            if method is None:
                return out
            out.append((props, body))
    finally:
        connection.close()


def wait_for_messages(stack, queue_name: str, count: int = 1) -> list[tuple[object, bytes]]:
    """The messages of a queue once it holds ``count`` (dead-lettering is asynchronous); at most WAIT s."""
    deadline = time.monotonic() + WAIT
    while True:
        messages = raw_get_all(stack, queue_name)
        if len(messages) >= count or time.monotonic() > deadline:
            return messages
        time.sleep(0.1)


class TestDistributedMailQueue(MailQueueContract):
    @pytest.fixture
    def factory(self, another):
        return another()

    @pytest.fixture
    def read_content(self, s3_blobs):
        return MimeMessageStore(s3_blobs).read

    @pytest.fixture
    def dead_letters(self, stack):
        def names(queue):
            return [json.loads(body)["name"] for _, body in wait_for_messages(stack, queue.names.dead_letter_queue)]
        return names

    # ------------------------------------------------------------------ RabbitMQ specifics
    def test_queues_are_classic_v2_as_james_declares_them_and_messages_persistent(self, stack, queue):
        info = rabbitmq_management(stack, f"/api/queues/{vhost_path(stack)}/JamesMailQueue-workqueue-{queue.name}")
        assert info["type"] == "classic" and info["durable"] and not info["auto_delete"] and not info["exclusive"]
        assert info["arguments"] == {"x-queue-version": 2,
                                     "x-dead-letter-exchange": f"JamesMailQueue-dead-letter-exchange-{queue.name}"}
        dead = rabbitmq_management(stack, f"/api/queues/{vhost_path(stack)}/{queue.names.dead_letter_queue}")
        assert dead["type"] == "classic" and dead["durable"] and dead["arguments"] == {"x-queue-version": 2}
        bindings = rabbitmq_management(
            stack, f"/api/exchanges/{vhost_path(stack)}/JamesMailQueue-exchange-{queue.name}/bindings/source")
        assert [(b["destination"], b["routing_key"]) for b in bindings] == \
            [(f"JamesMailQueue-workqueue-{queue.name}", "")]
        mail = make_mail()
        queue.enqueue(mail)
        [(props, body)] = raw_get_all(stack, queue.names.workqueue)
        assert props.delivery_mode == 2 and props.content_type == "text/plain"
        doc = json.loads(body)
        assert doc["name"] == mail.name and uuid.UUID(doc["enqueueId"])
        assert doc["headerBlobId"] and doc["bodyBlobId"]

    def test_quorum_queues_carry_james_arguments(self, stack, another):
        queue = another(quorum=True, quorum_replication_factor=1, quorum_delivery_limit=7).get(
            f"q-{uuid.uuid4().hex[:12]}")
        work = rabbitmq_management(stack, f"/api/queues/{vhost_path(stack)}/{queue.names.workqueue}")
        dead = rabbitmq_management(stack, f"/api/queues/{vhost_path(stack)}/{queue.names.dead_letter_queue}")
        expected = {"x-queue-type": "quorum", "x-quorum-initial-group-size": 1, "x-delivery-limit": 7}
        assert work["type"] == dead["type"] == "quorum"
        assert work["arguments"] == {**expected, "x-dead-letter-exchange": queue.names.dead_letter_exchange}
        assert dead["arguments"] == expected
        queue.enqueue(make_mail())
        item = queue.dequeue(timeout=WAIT)
        item.done(Outcome.SUCCESS)

    def test_a_queue_declared_with_other_arguments_is_refused_clearly(self, stack, queue, another):
        """A node configured for quorum queues meets the classic queues another node declared."""
        with pytest.raises(MailQueueError, match=r"already has JamesMailQueue-workqueue-.* with other arguments.*"
                                                 r"x-queue-type.*mailserver rabbitmq migrate-queues.*"
                                                 r"MAILSERVER_QUEUE_QUORUM"):
            another(quorum=True).get(queue.name)
        queue.enqueue(make_mail())   # the existing queue is untouched and still works
        item = queue.dequeue(timeout=WAIT)
        assert item is not None
        item.done(Outcome.SUCCESS)

    def test_delay_queue_topology(self, stack, queue):
        queue.enqueue(make_mail(), delay=timedelta(seconds=90))
        name = f"JamesMailQueue-delay-{queue.name}-90000"
        info = rabbitmq_management(stack, f"/api/queues/{vhost_path(stack)}/{name}")
        assert info["durable"] and info["arguments"]["x-message-ttl"] == 90000
        assert info["arguments"]["x-dead-letter-exchange"] == queue.names.exchange
        assert info["arguments"]["x-dead-letter-routing-key"] == ""
        assert queue.delays() == [90000]
        assert queue.size() == 1

    def test_another_process_dequeues_what_one_enqueued(self, queue, another):
        mail = make_mail()
        queue.enqueue(mail)
        other = another().get(queue.name)
        item = other.dequeue(timeout=WAIT)
        assert item is not None and item.mail.name == mail.name
        item.done(Outcome.SUCCESS)
        assert queue.dequeue(timeout=SHORT) is None

    def test_a_consumer_loop_stays_subscribed_between_mails_and_a_single_dequeue_does_not(self, stack, queue):
        """No subscribe and cancel per mail in a consumer loop (issue 16): one consumer for the whole loop."""
        def consumers() -> int:
            connection = pika.BlockingConnection(amqp_parameters(stack))
            try:
                return connection.channel().queue_declare(queue.names.workqueue, passive=True).method.consumer_count
            finally:
                connection.close()
        for _ in range(3):
            queue.enqueue(make_mail())

        single = queue.dequeue(timeout=WAIT)
        assert consumers() == 0            # cancelled once it handed out its mail
        single.done(Outcome.SUCCESS)
        for _ in range(2):
            item = queue.dequeue(timeout=WAIT, keep_consuming=True)
            assert consumers() == 1
            item.done(Outcome.SUCCESS)
            assert consumers() == 1        # still subscribed for the next mail
        queue.release()
        assert consumers() == 0
        assert queue.dequeue(timeout=SHORT) is None

    def test_unacked_item_is_redelivered_after_its_connection_closes(self, queue, another):
        mail = make_mail()
        queue.enqueue(mail)
        crashing = another().get(queue.name)
        item = crashing.dequeue(timeout=WAIT)
        assert item.mail.name == mail.name
        crashing.close()  # the consumer process dies with the message unacked
        again = queue.dequeue(timeout=WAIT)
        assert again is not None and again.enqueue_id == item.enqueue_id
        again.done(Outcome.SUCCESS)

    def test_republish_after_the_broker_lost_the_message(self, stack, queue):
        mail = make_mail()
        queue.enqueue(mail)
        [view] = queue.browse()
        connection = pika.BlockingConnection(amqp_parameters(stack))
        try:
            connection.channel().queue_purge(queue.names.workqueue)  # the broker lost it
        finally:
            connection.close()
        assert queue.dequeue(timeout=SHORT) is None
        assert queue.republish_not_processed(datetime.now(UTC) - timedelta(hours=1)) == 0  # too recent
        assert queue.republish_not_processed(datetime.now(UTC) + timedelta(minutes=1)) == 1
        item = queue.dequeue(timeout=WAIT)
        assert item is not None and item.mail.name == mail.name and item.enqueue_id == view.enqueue_id
        item.done(Outcome.SUCCESS)
        assert queue.republish_not_processed(datetime.now(UTC) + timedelta(minutes=1)) == 0

    def test_undeserialisable_message_goes_to_the_dead_letter_queue(self, stack, queue):
        connection = pika.BlockingConnection(amqp_parameters(stack))
        try:
            connection.channel().basic_publish(queue.names.exchange, "", b"{not json")
        finally:
            connection.close()
        assert queue.dequeue(timeout=SHORT) is None
        assert [body for _, body in wait_for_messages(stack, queue.names.dead_letter_queue)] == [b"{not json"]

    def test_reference_with_missing_blobs_goes_to_the_dead_letter_queue(self, stack, queue):
        mail = make_mail(content=MailContent.of_blobs(f"missing-{uuid.uuid4()}", f"missing-{uuid.uuid4()}", 10))
        body = serialize_reference(MailReference(uuid.uuid4(), mail))
        connection = pika.BlockingConnection(amqp_parameters(stack))
        try:
            connection.channel().basic_publish(queue.names.exchange, "", body,
                                               pika.BasicProperties(headers={"x-mail-size": 10}))
        finally:
            connection.close()
        assert queue.dequeue(timeout=SHORT) is None
        assert len(wait_for_messages(stack, queue.names.dead_letter_queue)) == 1

    def test_view_rows_and_deleted_marks(self, cassandra, queue):
        mail = make_mail()
        queue.enqueue(mail)
        [view] = queue.browse()
        item = queue.dequeue(timeout=WAIT)
        enqueue_id = uuid.UUID(item.enqueue_id)
        assert item.enqueue_id == view.enqueue_id
        [row] = [r for r in cassandra.execute(
            "SELECT * FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? AND bucketId = ?",
            (queue.name, slice_start(view.enqueued_time, timedelta(hours=1)), 0)) if r["enqueueid"] == enqueue_id]
        assert row["name"] == mail.name and row["recipients"] == ["r1@example.com", "r2@other.org"]
        assert row["perrecipientspecificheaders"] == [("r1@example.com", "X-Tag", "v")]
        assert json.loads(row["attributes"]["count"]) == {"serializer": "IntSerializer", "value": 3}
        assert not queue.view.is_deleted(enqueue_id)
        item.done(Outcome.SUCCESS)
        assert queue.view.is_deleted(enqueue_id)
        assert cassandra.one("SELECT browseStart FROM browseStart WHERE queueName = ?", (queue.name,))
        assert cassandra.one("SELECT contentStart FROM contentStart WHERE queueName = ?", (queue.name,))

    def test_enqueue_fails_when_the_view_write_fails(self, faults, queue):
        faults.fail("enqueuedMailsV4", "INSERT")
        with pytest.raises(MailQueueError):
            queue.enqueue(make_mail())
        assert queue.dequeue(timeout=SHORT) is None
        assert queue.size() == 0

    def test_unroutable_publish_fails_the_enqueue_and_marks_it_deleted(self, stack, queue):
        connection = pika.BlockingConnection(amqp_parameters(stack))
        try:
            connection.channel().queue_unbind(queue.names.workqueue, queue.names.exchange, routing_key="")
        finally:
            connection.close()
        with pytest.raises(MailQueueError):
            queue.enqueue(make_mail())
        assert list(queue.browse()) == []

    def test_list_names_without_management_api(self, stack, cassandra, s3_blobs, factories):
        factory = DistributedMailQueueFactory(stack.amqp_url, cassandra, s3_blobs)
        factories.append(factory)
        name = f"q-{uuid.uuid4().hex[:12]}"
        factory.get(name)
        assert factory.list_names() == [name]

    def test_browse_start_update_and_cleanup(self, cassandra, another):
        clock = [datetime(2020, 1, 1, 10, 30, tzinfo=UTC)]
        queue = another(clock=lambda: clock[0]).get(f"q-{uuid.uuid4().hex[:12]}")
        assert queue.view.browse_start() == datetime(2020, 1, 1, 10, tzinfo=UTC)
        old = make_mail()
        queue.enqueue(old)
        item = queue.dequeue(timeout=WAIT)
        old_id = uuid.UUID(item.enqueue_id)
        item.done(Outcome.SUCCESS)
        assert queue.update_browse_start() is None  # the browse start is still within a slice window of now
        clock[0] = datetime(2020, 1, 1, 12, 10, tzinfo=UTC)
        live = make_mail()
        queue.enqueue(live, delay=timedelta(hours=5))  # stays enqueued
        clock[0] = datetime(2020, 1, 1, 15, 0, tzinfo=UTC)
        assert queue.update_browse_start() == datetime(2020, 1, 1, 12, tzinfo=UTC)
        assert queue.view.browse_start() == queue.view.content_start() == datetime(2020, 1, 1, 12, tzinfo=UTC)
        assert cassandra.execute("SELECT enqueueId FROM enqueuedMailsV4 WHERE queueName = ? AND timeRangeStart = ? "
                                 "AND bucketId = ?", (queue.name, datetime(2020, 1, 1, 10, tzinfo=UTC), 0)) == []
        assert not queue.view.is_deleted(old_id)  # the mark went with its slice
        assert [v.mail.name for v in queue.browse()] == [live.name]
        assert queue.update_browse_start() is None  # nothing newer to move to
        assert queue.clear() == 1
        clock[0] = datetime(2020, 1, 1, 16, 0, tzinfo=UTC)
        # removed, but its message still waits in a delay queue: the deleted mark must stay
        assert queue.update_browse_start() is None
        clock[0] = datetime(2020, 1, 2, 0, 0, tzinfo=UTC)
        assert queue.update_browse_start() == datetime(2020, 1, 1, 23, tzinfo=UTC)  # never into the last window
        assert list(queue.browse()) == []

    def test_flushed_message_keeps_the_reference(self, queue):
        mail = make_mail()
        queue.enqueue(mail, delay=timedelta(hours=1))
        assert queue.flush() == 1
        item = queue.dequeue(timeout=WAIT)
        assert (item.mail.name, item.mail.attributes, item.mail.content.size) == (mail.name, mail.attributes, len(RAW))
        item.done(Outcome.SUCCESS)


# ---------------------------------------------------------------------- who deletes which blobs
@pytest.fixture(params=[False, True], ids=["passthrough", "deduplication"])
def mode_queue(request, stack, cassandra, s3_blobs, factories):
    """A queue whose blob store has the mode of the parameter (same S3 buckets and client as ``s3_blobs``)."""
    from mailserver.blob.s3 import S3BlobStore

    store = S3BlobStore(s3_blobs.config, deduplication=request.param, client=s3_blobs.client)
    factory = make_factory(stack, cassandra, store)
    factories.append(factory)
    return factory.get(f"q-{uuid.uuid4().hex[:12]}")


def stored(contents: MimeMessageStore, content: MailContent) -> list[bool]:
    bucket = contents.blobs.default_bucket
    return [contents.blobs.exists(bucket, content.header_blob_id), contents.blobs.exists(bucket, content.body_blob_id)]


def test_an_entry_deletes_only_its_own_blobs_in_either_mode(mode_queue):
    """The previous holder (a spool item, a repository entry) deletes its blobs when done, and the queue
    entry its own once processed: without deduplication the entry must therefore hold a copy."""
    contents = mode_queue.contents
    dedup = contents.blobs.deduplicating
    held = contents.save(RAW)
    mode_queue.enqueue(make_mail(content=held))
    contents.delete(held)   # the previous holder is done with the mail
    item = mode_queue.dequeue(timeout=WAIT)
    assert item is not None and contents.read(item.mail.content) == RAW
    assert (item.mail.content.header_blob_id == held.header_blob_id) is dedup
    item.done(Outcome.SUCCESS)
    assert stored(contents, item.mail.content) == [dedup, dedup]   # real deletes only without deduplication


def test_handed_over_blobs_are_not_copied_and_go_with_the_entry(mode_queue):
    """SMTP intake hands its freshly written blobs over: no copy, and none left behind once processed."""
    contents = mode_queue.contents
    written = contents.save(RAW)
    mode_queue.enqueue(make_mail(content=written), hand_over=True)
    item = mode_queue.dequeue(timeout=WAIT)
    assert item is not None and item.mail.content.header_blob_id == written.header_blob_id
    assert contents.read(item.mail.content) == RAW
    item.done(Outcome.SUCCESS)
    dedup = contents.blobs.deduplicating
    assert stored(contents, written) == [dedup, dedup]


def test_a_processed_entry_deletes_the_content_it_was_dequeued_with_not_what_its_mail_points_to_now(mode_queue):
    """A mailet may point the mail at new content (a rewritten header): the entry still owns, and
    deletes, what it was dequeued with; the new blobs are whoever wrote them's (the spooler)."""
    contents = mode_queue.contents
    written = contents.save(RAW)
    mode_queue.enqueue(make_mail(content=written), hand_over=True)
    item = mode_queue.dequeue(timeout=WAIT)
    assert item is not None
    rewritten = contents.save(b"X-Rewritten: yes\r\n" + RAW)
    item.mail.content = rewritten
    item.done(Outcome.SUCCESS)
    dedup = contents.blobs.deduplicating
    assert stored(contents, written) == [dedup, dedup]
    assert stored(contents, rewritten) == [True, True]
