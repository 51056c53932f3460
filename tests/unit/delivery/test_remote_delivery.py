"""Remote delivery worker against a local aiosmtpd sink playing the remote MX."""

from __future__ import annotations

import ssl
import time
from datetime import timedelta

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.delivery import (
    DeliveryConfig,
    MxHost,
    RemoteDeliveryWorker,
    StaticResolver,
    parse_delay_times,
    reconcile,
)
from mailserver.model.address import MailAddress
from mailserver.model.mail import (
    DELIVERY_ERROR,
    DELIVERY_ERROR_CODE,
    DELIVERY_RETRY_COUNT,
    ERROR,
    IS_DELIVERY_PERMANENT_ERROR,
    Mail,
    MailContent,
    new_mail_name,
)
from mailserver.queue.api import OUTGOING, SPOOL, MailQueueError, Outcome
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.memory import MemoryMailQueueFactory
from tests.support.clock import ManualClock
from tests.support.events import eventually
from tests.support.ports import unused_port
from tests.support.queue_waits import dequeues_entered
from tests.unit.delivery.delivery_helpers import Sink
from tests.unit.smtp.smtp_helpers import self_signed

BODY = b"From: alice@local.test\r\nTo: carol@remote.test\r\nSubject: out\r\n\r\nHello Carol.\r\n"


@pytest.fixture
def sink():
    with Sink() as s:
        yield s


@pytest.fixture
def clock():
    return ManualClock(1_000_000.0)


@pytest.fixture
def queues(clock):
    factory = MemoryMailQueueFactory(clock=clock)
    return factory.get(OUTGOING), factory.get(SPOOL)


def outgoing_mail(*rcpts: str, sender: str | None = "alice@local.test", content: bytes = BODY) -> Mail:
    domain = MailAddress.of(rcpts[0]).domain.name
    return Mail(name=f"{new_mail_name()}-to-{domain}", sender=MailAddress.of(sender) if sender else None,
                recipients=[MailAddress.of(r) for r in rcpts], content=MailContent.of_bytes(content))


def worker_for(queues, table, **config) -> RemoteDeliveryWorker:
    outgoing, spool = queues
    cfg = DeliveryConfig(**{"delay_times": "1s", "max_retries": 2, "connection_timeout": 5, "timeout": 5, **config})
    return RemoteDeliveryWorker(outgoing, spool, StaticResolver(table), config=cfg)


def take(queue):
    item = queue.dequeue(timeout=0)
    assert item is not None, f"nothing due on {queue.name}"
    return item



# -- configuration ------------------------------------------------------------------------------
def test_delay_times_syntax():
    assert parse_delay_times("10m,30m,2h") == [timedelta(minutes=10), timedelta(minutes=30), timedelta(hours=2)]
    assert parse_delay_times("2*5s, 1 minute, 500") == [timedelta(seconds=5)] * 2 + [
        timedelta(minutes=1), timedelta(milliseconds=500)]
    with pytest.raises(ValueError):
        parse_delay_times("10 fortnights")
    with pytest.raises(ValueError):
        parse_delay_times("ten minutes")


def test_delay_times_take_james_durations_only():
    assert parse_delay_times("1w, 3*2 Hours") == [timedelta(weeks=1)] + [timedelta(hours=2)] * 3
    for bad in ("500 milliseconds", "-5s", "2*3*1h", "x*1h"):
        with pytest.raises(ValueError, match=r"delay time|attempt count"):
            parse_delay_times(bad)


def test_max_retries_reconciliation():
    three = parse_delay_times("5000, 100000, 500000")
    assert reconcile(three, 3) == (three, 3)
    assert reconcile(three, 2) == (three, 3)              # longer list raises maxRetries
    delays, retries = reconcile(three, 5)                  # shorter list repeats its last delay
    assert retries == 5 and delays[3:] == [timedelta(seconds=500)] * 2
    config = DeliveryConfig(delay_times="2*1s", max_retries=3)
    assert config.retries == 3 and config.delay_for(3) == timedelta(seconds=1)


def test_static_resolver_and_host_port():
    resolver = StaticResolver({"example.com": [("mx2.example.com", 20, "10.0.0.2"),
                                               ("mx1.example.com", 10, "127.0.0.1:2526")]})
    hosts = resolver.resolve("EXAMPLE.com.")
    assert [h.name for h in hosts] == ["mx1.example.com", "mx2.example.com"]
    assert hosts[0].host_port == ("127.0.0.1", 2526) and hosts[1].host_port == ("10.0.0.2", 25)
    assert MxHost("v6", 0, "[::1]:2526").host_port == ("::1", 2526)


# -- delivery -----------------------------------------------------------------------------------
def test_success_delivers_and_acks(queues, sink):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx.remote.test", 10, sink.address)]})
    outgoing.enqueue(outgoing_mail("carol@remote.test"))
    assert worker.process(take(outgoing)) is Outcome.SUCCESS
    [(sender, rcpts, content, _tls)] = sink.handler.messages
    assert (sender, rcpts, content) == ("alice@local.test", ["carol@remote.test"], BODY)
    assert outgoing.size() == 0 and spool.size() == 0


def test_blob_backed_content_is_read_from_the_store(queues, sink):
    outgoing, _ = queues
    store = MimeMessageStore(MemoryBlobStore())
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    worker.store = store
    mail = outgoing_mail("carol@remote.test")
    mail.content = store.save(BODY)
    outgoing.enqueue(mail)
    assert worker.process(take(outgoing)) is Outcome.SUCCESS
    assert sink.handler.messages[0][2] == BODY


def test_starttls_is_used_when_offered(queues, tmp_path):
    cert, key = self_signed(tmp_path)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    outgoing, _ = queues
    with Sink(tls_context=context) as tls_sink:
        worker = worker_for(queues, {"remote.test": [("mx", 10, tls_sink.address)]})
        outgoing.enqueue(outgoing_mail("carol@remote.test"))
        assert worker.process(take(outgoing)) is Outcome.SUCCESS
        assert tls_sink.handler.messages[0][3] is True


def test_next_mx_when_the_first_is_unreachable(queues, sink):
    outgoing, _ = queues
    worker = worker_for(queues, {"remote.test": [("dead", 5, f"127.0.0.1:{unused_port()}"), ("mx", 10, sink.address)]},
                        load_balancing=False)
    outgoing.enqueue(outgoing_mail("carol@remote.test"))
    assert worker.process(take(outgoing)) is Outcome.SUCCESS
    assert len(sink.handler.messages) == 1


def test_temporary_failure_is_retried_after_its_delay_then_delivered(queues, sink, clock):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    sink.handler.data_replies = ["451 4.3.0 try later"]
    original = outgoing_mail("carol@remote.test")
    outgoing.enqueue(original)
    assert worker.process(take(outgoing)) is Outcome.SUCCESS   # re-enqueued, so the first copy is acked
    assert sink.handler.messages == []
    assert outgoing.size() == 1 and outgoing.dequeue(timeout=0) is None   # delayed by 1 s
    clock.now += 1.1
    item = take(outgoing)
    assert item.mail.name == original.name
    assert item.mail.state == ERROR and item.mail.attributes[DELIVERY_RETRY_COUNT] == 1
    assert worker.process(item) is Outcome.SUCCESS
    assert len(sink.handler.messages) == 1
    assert outgoing.size() == 0 and spool.size() == 0


def test_permanent_failure_bounces_to_the_sender(queues, sink):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    sink.handler.rcpt_replies["carol@remote.test"] = "550 5.1.1 no such user"
    mail = outgoing_mail("carol@remote.test")
    outgoing.enqueue(mail)
    assert worker.process(take(outgoing)) is Outcome.SUCCESS
    assert outgoing.size() == 0
    bounce = take(spool).mail
    assert bounce.name == mail.name and bounce.state == "bounces"
    assert str(bounce.sender) == "alice@local.test"
    assert bounce.attributes[DELIVERY_ERROR_CODE] == 550
    assert "5.1.1 no such user" in bounce.attributes[DELIVERY_ERROR]
    assert bounce.attributes[IS_DELIVERY_PERMANENT_ERROR] is True


def test_permanent_failure_at_data_bounces(queues, sink):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    sink.handler.data_replies = ["554 5.7.1 rejected as spam"]
    outgoing.enqueue(outgoing_mail("carol@remote.test"))
    worker.process(take(outgoing))
    assert take(spool).mail.attributes[DELIVERY_ERROR_CODE] == 554


def test_retries_exhausted_bounce(queues, sink, clock):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]}, max_retries=2)
    sink.handler.rcpt_replies["carol@remote.test"] = "450 4.2.1 mailbox busy"
    outgoing.enqueue(outgoing_mail("carol@remote.test"))
    for attempt in range(3):
        item = take(outgoing)
        assert item.mail.attributes.get(DELIVERY_RETRY_COUNT) == (attempt or None)
        worker.process(item)
        clock.now += 1.1
    assert outgoing.size() == 0
    bounce = take(spool).mail
    assert bounce.state == "bounces"
    assert bounce.attributes[IS_DELIVERY_PERMANENT_ERROR] is False
    assert bounce.attributes[DELIVERY_ERROR].startswith("Too many retries failure. Bouncing after 2 retries.")
    assert bounce.attributes[DELIVERY_ERROR_CODE] == 450


def test_unreachable_everywhere_is_temporary(queues, clock):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("dead", 10, f"127.0.0.1:{unused_port()}")]}, max_retries=1)
    outgoing.enqueue(outgoing_mail("carol@remote.test"))
    worker.process(take(outgoing))
    assert spool.size() == 0 and outgoing.size() == 1
    clock.now += 1.1
    worker.process(take(outgoing))
    bounce = take(spool).mail
    assert DELIVERY_ERROR_CODE not in bounce.attributes
    assert "Too many retries" in bounce.attributes[DELIVERY_ERROR]


def test_unknown_domain_bounces_at_once(queues):
    outgoing, spool = queues
    worker = worker_for(queues, {})
    outgoing.enqueue(outgoing_mail("carol@nowhere.test"))
    worker.process(take(outgoing))
    bounce = take(spool).mail
    assert bounce.attributes[IS_DELIVERY_PERMANENT_ERROR] is True
    assert "nowhere.test" in bounce.attributes[DELIVERY_ERROR]


def test_no_bounce_for_a_null_sender(queues, sink):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    sink.handler.rcpt_replies["carol@remote.test"] = "550 5.1.1 no such user"
    outgoing.enqueue(outgoing_mail("carol@remote.test", sender=None))
    assert worker.process(take(outgoing)) is Outcome.SUCCESS
    assert spool.size() == 0 and outgoing.size() == 0


def test_recipients_are_handled_separately(queues, sink):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    sink.handler.rcpt_replies["bad@remote.test"] = "550 5.1.1 no such user"
    sink.handler.rcpt_replies["busy@remote.test"] = "452 4.2.2 over quota"
    outgoing.enqueue(outgoing_mail("carol@remote.test", "bad@remote.test", "busy@remote.test"))
    worker.process(take(outgoing))
    assert [m[1] for m in sink.handler.messages] == [["carol@remote.test"]]
    assert [str(r) for r in take(spool).mail.recipients] == ["bad@remote.test"]
    assert outgoing.size() == 1
    assert [str(r) for r in next(outgoing.browse()).mail.recipients] == ["busy@remote.test"]


def test_failing_bounce_hand_off_means_retry(queues, sink):
    outgoing, spool = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    sink.handler.rcpt_replies["carol@remote.test"] = "550 5.1.1 no such user"

    def broken(mail, delay=None):
        raise MailQueueError("spool down")

    spool.enqueue = broken
    outgoing.enqueue(outgoing_mail("carol@remote.test"))
    assert worker.process(take(outgoing)) is Outcome.RETRY
    assert outgoing.size() == 1   # redelivered by the queue


@pytest.mark.parametrize("vector", [b"\n.\n", b"\r.\r", b"\n.\r\n", b"\r\n.\r\r\n", b"\r\r\n.\r\r\n", b"\r\n.\r\n"])
def test_outbound_serialisation_never_smuggles(queues, sink, vector):
    outgoing, _ = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]})
    smuggled = b"MAIL FROM:<ceo@remote.test>\r\nRCPT TO:<victim@remote.test>\r\nDATA\r\nsmuggled\r\n"
    outgoing.enqueue(outgoing_mail("carol@remote.test", content=BODY + b"before" + vector + smuggled))
    assert worker.process(take(outgoing)) is Outcome.SUCCESS
    [(_, rcpts, content, _)] = sink.handler.messages
    assert rcpts == ["carol@remote.test"]
    assert b"MAIL FROM:<ceo@remote.test>" in content


def test_worker_loop_delivers_and_stops_gracefully(queues, sink):
    outgoing, _ = queues
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]}, poll_seconds=0.05).start(threads=2)
    try:
        for _ in range(3):
            outgoing.enqueue(outgoing_mail("carol@remote.test"))
        deadline = time.monotonic() + 10
        while len(sink.handler.messages) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(sink.handler.messages) == 3
    finally:
        assert worker.stop(timeout=5)


def test_stop_does_not_wait_out_an_idle_threads_poll(queues, sink, monkeypatch):
    # Threads wait an hour for a mail: stop() ends the wait instead of joining them after it.
    entered = dequeues_entered(monkeypatch, queues[0])
    worker = worker_for(queues, {"remote.test": [("mx", 10, sink.address)]}, poll_seconds=3600).start(threads=2)
    eventually(lambda: entered() == 2, timeout=10)   # both threads are waiting in dequeue
    assert worker.stop(timeout=10)
