"""SMTP intake and remote delivery on the distributed queue (RabbitMQ + Cassandra view + S3)."""

from __future__ import annotations

import re
import smtplib
import time
import uuid

import pika
import pytest

from mailserver.delivery import DeliveryConfig, RemoteDeliveryWorker, StaticResolver
from mailserver.domains.memory import MemoryDomainList
from mailserver.model.address import MailAddress
from mailserver.model.mail import (
    DELIVERY_ERROR_CODE,
    DELIVERY_RETRY_COUNT,
    HELO,
    IS_DELIVERY_PERMANENT_ERROR,
    SMTP_SESSION_ID,
    Mail,
    MailContent,
    new_mail_name,
)
from mailserver.queue.api import Outcome
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.rabbitmq import DistributedMailQueueFactory
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from tests.support.clients import amqp_parameters
from tests.unit.delivery.delivery_helpers import Sink

pytestmark = pytest.mark.integration

MESSAGE = b"From: bob@remote.test\r\nTo: alice@local.test\r\nSubject: hello\r\n\r\nHello Alice.\r\n"


@pytest.fixture
def factory(stack, cassandra, s3_blobs):
    made = DistributedMailQueueFactory(stack.amqp_url, cassandra, s3_blobs,
                                       management_url=stack.rabbitmq_management_url)
    yield made
    queues = list(made._queues.values())
    made.close()
    connection = pika.BlockingConnection(amqp_parameters(stack))
    try:
        for queue in queues:
            n = queue.names
            for name in (n.workqueue, n.dead_letter_queue, *(n.delay_queue(ms) for ms in queue.delays())):
                channel = connection.channel()
                try:
                    channel.queue_delete(name)
                except pika.exceptions.ChannelClosedByBroker:
                    pass
            for name in (n.exchange, n.dead_letter_exchange, n.delay_exchange):
                channel = connection.channel()
                try:
                    channel.exchange_delete(name)
                except pika.exceptions.ChannelClosedByBroker:
                    pass
    finally:
        connection.close()


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_item(queue, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        item = queue.dequeue(timeout=0.5)
        if item is not None:
            return item
    raise AssertionError(f"nothing arrived on {queue.name} within {timeout}s")


def test_accepted_mail_is_durable_on_the_distributed_spool(factory, s3_blobs):
    spool = factory.get(name("spool"))
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.local.test"), spool, MemoryDomainList(["local.test"]))
    with SmtpServerThread(server) as thread, smtplib.SMTP("127.0.0.1", thread.port, timeout=30) as client:
        client.ehlo("client.remote.test")
        client.mail("bob@remote.test")
        client.rcpt("alice@local.test")
        code, text = client.data(MESSAGE)
    assert code == 250
    mail_name = re.search(r"queued as (\S+)", text.decode()).group(1)
    item = wait_item(spool)
    try:
        assert item.mail.name == mail_name
        assert item.mail.attributes[HELO] == "client.remote.test"
        assert item.mail.attributes[SMTP_SESSION_ID]
        raw = MimeMessageStore(s3_blobs).read(item.mail.content)
        assert raw.startswith(b"Received: from 127.0.0.1 (EHLO client.remote.test)") and raw.endswith(MESSAGE)
    finally:
        item.done(Outcome.SUCCESS)


def outgoing_mail(rcpt: str) -> Mail:
    return Mail(name=f"{new_mail_name()}-to-remote.test", sender=MailAddress.of("alice@local.test"),
                recipients=[MailAddress.of(rcpt)], content=MailContent.of_bytes(MESSAGE))


def test_remote_delivery_retries_after_its_delay_then_bounces(factory, s3_blobs):
    outgoing, spool = factory.get(name("outgoing")), factory.get(name("spool"))
    with Sink() as sink:
        worker = RemoteDeliveryWorker(
            outgoing, spool, StaticResolver({"remote.test": [("mx", 10, sink.address)]}),
            config=DeliveryConfig(delay_times="1s", max_retries=1, poll_seconds=0.2, connection_timeout=5,
                                  timeout=10),
            store=MimeMessageStore(s3_blobs))
        sink.handler.data_replies = ["451 4.3.0 try later"]
        sink.handler.rcpt_replies["nobody@remote.test"] = "550 5.1.1 no such user"
        worker.start()
        try:
            started = time.monotonic()
            outgoing.enqueue(outgoing_mail("carol@remote.test"))
            deadline = time.monotonic() + 30
            while not sink.handler.messages and time.monotonic() < deadline:
                time.sleep(0.1)
            assert [m[1] for m in sink.handler.messages] == [["carol@remote.test"]]
            assert time.monotonic() - started >= 1.0          # the 1 s delay was honoured
            outgoing.enqueue(outgoing_mail("nobody@remote.test"))
            bounce = wait_item(spool)
            try:
                assert bounce.mail.state == "bounces"
                assert bounce.mail.attributes[DELIVERY_ERROR_CODE] == 550
                assert bounce.mail.attributes[IS_DELIVERY_PERMANENT_ERROR] is True
                assert DELIVERY_RETRY_COUNT not in bounce.mail.attributes
            finally:
                bounce.done(Outcome.SUCCESS)
        finally:
            assert worker.stop(timeout=10)
        assert outgoing.size() == 0
