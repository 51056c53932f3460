"""The mail-queue contract on the memory adapter, plus its injectable clock."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.queue.api import Outcome, RemoveField
from mailserver.queue.content import MimeMessageStore
from mailserver.queue.memory import MemoryMailQueueFactory
from tests.contract.mail_queue_contract import RAW, MailQueueContract, make_mail


class TestMemoryMailQueue(MailQueueContract):
    @pytest.fixture
    def factory(self):
        return MemoryMailQueueFactory()

    @pytest.fixture
    def read_content(self):
        return lambda content: content.data

    @pytest.fixture
    def dead_letters(self):
        return lambda queue: [m.name for m in queue.dead_letters]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def queue(clock):
    return MemoryMailQueueFactory(clock=clock).get("spool")


def test_delay_follows_the_injected_clock(queue, clock):
    mail = make_mail()
    queue.enqueue(mail, delay=timedelta(minutes=10))
    assert queue.dequeue(timeout=0) is None
    clock.now += 599
    assert queue.dequeue(timeout=0) is None
    [view] = queue.browse()
    assert view.next_delivery is not None
    clock.now += 1
    item = queue.dequeue(timeout=0)
    assert item.mail.name == mail.name
    item.done(Outcome.SUCCESS)


def test_due_mails_come_out_by_due_time_then_arrival(queue, clock):
    late, early, now_ = make_mail(), make_mail(), make_mail()
    queue.enqueue(late, delay=timedelta(seconds=20))
    queue.enqueue(early, delay=timedelta(seconds=10))
    queue.enqueue(now_)
    clock.now += 30
    names = []
    while (item := queue.dequeue(timeout=0)) is not None:
        names.append(item.mail.name)
        item.done(Outcome.SUCCESS)
    assert names == [now_.name, early.name, late.name]


def test_retry_goes_back_to_its_place(queue):
    a, b = make_mail(), make_mail()
    queue.enqueue(a)
    queue.enqueue(b)
    queue.dequeue(timeout=0).done(Outcome.RETRY)
    assert queue.dequeue(timeout=0).mail.name == a.name


def test_removed_in_flight_item_does_not_come_back_on_retry(queue):
    mail = make_mail()
    queue.enqueue(mail)
    item = queue.dequeue(timeout=0)
    assert queue.remove(RemoveField.NAME, mail.name) == 1
    item.done(Outcome.RETRY)
    assert queue.dequeue(timeout=0) is None


def test_a_waiting_consumer_is_woken_by_an_enqueue(queue):
    got = []
    consumer = threading.Thread(target=lambda: got.append(queue.dequeue(timeout=10)))
    consumer.start()
    mail = make_mail()
    queue.enqueue(mail)
    consumer.join(15)
    assert got and got[0].mail.name == mail.name


def test_concurrent_consumers_take_each_mail_once(queue):
    mails = [make_mail() for _ in range(50)]
    for mail in mails:
        queue.enqueue(mail)
    taken: list[str] = []
    lock = threading.Lock()

    def consume():
        while (item := queue.dequeue(timeout=0.2)) is not None:
            with lock:
                taken.append(item.mail.name)
            item.done(Outcome.SUCCESS)

    threads = [threading.Thread(target=consume) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(taken) == sorted(m.name for m in mails)


def test_empty_name_is_refused():
    with pytest.raises(ValueError):
        MemoryMailQueueFactory().get("")


@pytest.mark.parametrize("deduplication", [False, True], ids=["passthrough", "deduplication"])
def test_with_a_content_store_entries_own_their_blobs_as_the_distributed_queue(deduplication):
    contents = MimeMessageStore(MemoryBlobStore(deduplication=deduplication))
    queue = MemoryMailQueueFactory(contents=contents).get("spool")
    held = contents.save(RAW)
    queue.enqueue(make_mail(content=held))
    contents.delete(held)                       # the previous holder is done
    queue.enqueue(make_mail(content=contents.save(RAW)), hand_over=True)
    queue.enqueue(make_mail(content=contents.save(RAW)))
    first, second = queue.dequeue(timeout=0), queue.dequeue(timeout=0)
    assert contents.read(first.mail.content) == RAW and contents.read(second.mail.content) == RAW
    first.done(Outcome.SUCCESS)
    second.done(Outcome.REJECT)                 # dead-lettered: its content stays
    assert queue.clear() == 1                   # removed: its content goes
    blobs = contents.blobs
    assert contents.read(second.mail.content) == RAW
    # header + body of: the dead-lettered entry's, and the third mail's source (its own holder's, not the queue's)
    assert len(list(blobs.list_blobs(blobs.default_bucket))) == (2 if deduplication else 4)


def test_a_processed_entry_deletes_the_content_it_was_dequeued_with_as_the_distributed_queue():
    contents = MimeMessageStore(MemoryBlobStore())
    queue = MemoryMailQueueFactory(contents=contents).get("spool")
    written = contents.save(RAW)
    queue.enqueue(make_mail(content=written), hand_over=True)
    item = queue.dequeue(timeout=0)
    rewritten = contents.save(b"X-Rewritten: yes\r\n" + RAW)
    item.mail.content = rewritten               # a mailet pointed the mail at new content
    item.done(Outcome.SUCCESS)
    blobs = contents.blobs
    assert {str(b) for b in blobs.list_blobs(blobs.default_bucket)} == {rewritten.header_blob_id,
                                                                        rewritten.body_blob_id}
