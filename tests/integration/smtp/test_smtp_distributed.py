"""SMTP intake and remote delivery on the distributed queue (RabbitMQ + Cassandra view + S3).

The intake holes of issue 16 are shown here too, as SMTP dialogues against James's Cassandra
tables (users, domains, rrt) and what reached the distributed spool.
"""

from __future__ import annotations

import re
import smtplib
import time
import uuid

import pytest

from mailserver.delivery import DeliveryConfig, RemoteDeliveryWorker, StaticResolver
from mailserver.domains.cassandra import CassandraDomainList
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
from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from mailserver.users.cassandra import CassandraUsersRepository
from tests.support.distributed_queue_cleanup import delete_rabbitmq_objects
from tests.unit.delivery.delivery_helpers import Sink
from tests.unit.smtp.smtp_helpers import RawClient

pytestmark = pytest.mark.integration

MESSAGE = b"From: bob@remote.test\r\nTo: alice@local.test\r\nSubject: hello\r\n\r\nHello Alice.\r\n"


@pytest.fixture
def factory(stack, cassandra, s3_blobs):
    made = DistributedMailQueueFactory(stack.amqp_url, cassandra, s3_blobs,
                                       management_url=stack.rabbitmq_management_url)
    yield made
    made.close()
    delete_rabbitmq_objects(stack, made)


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


# -- issue 16: the intake holes, on Cassandra users / domains / rrt and the distributed spool ---------
@pytest.fixture
def intake(factory, cassandra, s3_blobs):
    """A server for a fresh local domain with alice, the alias sales -> alice, on a fresh spool."""
    domain = f"d{uuid.uuid4().hex[:10]}.test"
    domains = CassandraDomainList(cassandra)
    domains.add(domain)
    users = CassandraUsersRepository(cassandra, domains)
    users.add_user(f"alice@{domain}", "alice-secret")
    rrt = CassandraRecipientRewriteTable(cassandra, domains)
    rrt.add_alias(f"sales@{domain}", f"alice@{domain}")
    spool = factory.get(name("spool"))
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.local.test"), spool, domains, users,
                        store=MimeMessageStore(s3_blobs), rewriter=RecipientRewriter(rrt, domains),
                        postmaster=MailAddress.of(f"postmaster@{domain}"))
    with SmtpServerThread(server) as thread:
        yield thread, spool, domain
    users.remove_user(f"alice@{domain}")
    domains.remove(domain)


def session(port: int) -> RawClient:
    client = RawClient(port)
    assert client.reply().startswith("220")
    assert client.command("EHLO client.remote.test").startswith("250")
    return client


def test_unknown_recipients_are_refused_at_rcpt_and_postmaster_is_accepted(intake):
    thread, spool, domain = intake
    client = session(thread.port)
    assert client.command("MAIL FROM:<someone@remote.test>") == "250 2.1.0 Sender <someone@remote.test> OK"
    assert client.command(f"RCPT TO:<nobody@{domain}>") == f"550 5.1.1 Unknown user: nobody@{domain}"
    assert client.command(f"RCPT TO:<sales@{domain}>") == f"250 2.1.5 Recipient <sales@{domain}> OK"
    assert client.command("RCPT TO:<Postmaster>") == f"250 2.1.5 Recipient <postmaster@{domain}> OK"
    assert client.command("DATA").startswith("354")
    client.send(b"Subject: hello\r\n\r\nbody\r\n.\r\n")
    assert client.reply().startswith("250 2.6.0")
    client.command("QUIT")
    client.close()
    item = wait_item(spool)
    try:
        assert [str(r) for r in item.mail.recipients] == [f"sales@{domain}", f"postmaster@{domain}"]
    finally:
        item.done(Outcome.SUCCESS)
    assert spool.dequeue(timeout=1) is None


def test_a_transaction_pipelined_after_a_refused_data_never_reaches_the_spool(intake):
    thread, spool, domain = intake
    client = session(thread.port)
    assert client.command("MAIL FROM:<someone@remote.test>").startswith("250")
    assert client.command(f"RCPT TO:<alice@{domain}>").startswith("250")
    assert client.command("DATA").startswith("354")
    second = (f"MAIL FROM:<ceo@{domain}>\r\nRCPT TO:<alice@{domain}>\r\nDATA\r\n"
              f"Subject: smuggled\r\n\r\nsend money\r\n.\r\n").encode()
    client.send(b"Subject: first\r\n\r\nbare\nline feed\r\n.\r\n" + second)   # one write
    assert client.reply() == "500 5.0.0 line delimiter must be CRLF"
    client.sock.settimeout(10)
    assert client.sock.recv(1) == b""   # the session was ended: the second transaction never ran
    client.close()
    assert spool.dequeue(timeout=2) is None


def test_an_aborted_data_puts_nothing_on_the_spool(intake):
    thread, spool, domain = intake
    client = session(thread.port)
    client.command("MAIL FROM:<someone@remote.test>")
    client.command(f"RCPT TO:<alice@{domain}>")
    assert client.command("DATA").startswith("354")
    client.send(b"Subject: never finished\r\n\r\n" + (b"y" * 998 + b"\r\n") * 2000)   # 2 MB, no end of data
    client.sock.close()
    deadline = time.monotonic() + 10
    while thread.server.limits.count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert thread.server.limits.count() == 0
    assert spool.dequeue(timeout=1) is None
