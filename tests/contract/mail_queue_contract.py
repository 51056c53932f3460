"""Behaviour every mail-queue adapter must have (memory, and RabbitMQ + Cassandra + S3).

Runners provide ``factory`` (a MailQueueFactory, cleaned up by the runner), ``read_content``
(MailContent -> bytes) and ``dead_letters`` (queue -> names of the mails dead-lettered so far).
Timing: delays are short (1.5 s) and only ordering/availability is asserted, never speed.
"""

from __future__ import annotations

import gc
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from mailserver.model.address import MailAddress
from mailserver.model.mail import MAILET_ERROR, Mail, MailContent, PerRecipientHeader, new_mail_name
from mailserver.queue.api import MailQueueError, Outcome, RemoveField
from tests.support.events import eventually
from tests.support.queue_waits import dequeues_entered

RAW = b"From: a@example.com\r\nSubject: queued\r\n\r\nbody of the queued mail\r\n"
WAIT = 10.0  # generous upper bound for "comes back" / "becomes due"; never reached when all is well
SHORT = 0.5  # how long to look for something that must not be there


def make_mail(**overrides) -> Mail:
    values = dict(
        name=new_mail_name(), sender=MailAddress.of("sender@example.com"),
        recipients=[MailAddress.of("r1@example.com"), MailAddress.of("r2@other.org")],
        content=MailContent.of_bytes(RAW), state="transport", error_message="soft failure",
        attributes={"org.apache.james.SMTPAuthUser": "bob@example.com", "count": 3, "big": 2**40,
                    "ratio": 0.5, "flag": True, "custom": {"n": 1, "l": [1, "a", None]}},
        remote_host="client.example", remote_addr="192.0.2.7",
        last_updated=datetime(2026, 11, 1, 12, 0, 0, 123000, tzinfo=UTC),
        per_recipient_headers=[PerRecipientHeader("r1@example.com", "X-Tag", "v")])
    values.update(overrides)
    return Mail(**values)


def drain_names(queue, timeout: float = SHORT) -> list[str]:
    names = []
    while (item := queue.dequeue(timeout=timeout)) is not None:
        names.append(item.mail.name)
        item.done(Outcome.SUCCESS)
    return names


class MailQueueContract:
    @pytest.fixture
    def factory(self):
        raise NotImplementedError

    @pytest.fixture
    def read_content(self):
        raise NotImplementedError

    @pytest.fixture
    def dead_letters(self):
        raise NotImplementedError

    @pytest.fixture
    def queue(self, factory):
        return factory.get(f"q-{uuid.uuid4().hex[:12]}")

    # ------------------------------------------------------------------ enqueue / dequeue
    def test_fifo_with_content_and_attributes_preserved(self, queue, read_content):
        first = make_mail()
        first.attributes[MAILET_ERROR] = object()  # not serialisable: dropped, as James does
        others = [make_mail(), make_mail()]
        for mail in [first, *others]:
            queue.enqueue(mail)
        item = queue.dequeue(timeout=WAIT)
        assert item is not None
        got = item.mail
        assert got.name == first.name
        assert (got.sender, got.recipients, got.state, got.error_message) == \
            (first.sender, first.recipients, "transport", "soft failure")
        assert got.attributes == {"org.apache.james.SMTPAuthUser": "bob@example.com", "count": 3, "big": 2**40,
                                  "ratio": 0.5, "flag": True, "custom": {"n": 1, "l": [1, "a", None]}}
        assert (got.remote_host, got.remote_addr) == ("client.example", "192.0.2.7")
        assert got.last_updated == first.last_updated
        assert got.per_recipient_headers == first.per_recipient_headers
        assert read_content(got.content) == RAW
        assert got.content.size == len(RAW)
        item.done(Outcome.SUCCESS)
        assert drain_names(queue) == [m.name for m in others]

    def test_null_sender_is_kept(self, queue):
        queue.enqueue(make_mail(sender=None))
        item = queue.dequeue(timeout=WAIT)
        assert item.mail.sender is None
        item.done(Outcome.SUCCESS)

    def test_enqueue_does_not_alias_the_callers_mail(self, queue):
        mail = make_mail()
        queue.enqueue(mail)
        mail.attributes["late"] = "change"
        item = queue.dequeue(timeout=WAIT)
        assert "late" not in item.mail.attributes
        item.done(Outcome.SUCCESS)

    def test_success_removes_the_mail(self, queue):
        queue.enqueue(make_mail())
        queue.dequeue(timeout=WAIT).done(Outcome.SUCCESS)
        assert queue.dequeue(timeout=SHORT) is None
        assert queue.size() == 0
        assert list(queue.browse()) == []

    def test_empty_queue_dequeue_returns_none(self, queue):
        assert queue.dequeue(timeout=SHORT) is None
        assert queue.dequeue(timeout=0) is None

    def test_interrupt_waits_ends_every_waiting_dequeue_and_the_queue_still_serves(self, queue, monkeypatch):
        # The waits are far longer than the join: only the interrupt can end them in time.
        results: list = []
        entered = dequeues_entered(monkeypatch, queue)

        def wait_for_a_mail() -> None:
            results.append(queue.dequeue(timeout=10 * WAIT))
            queue.release()

        waiters = [threading.Thread(target=wait_for_a_mail, daemon=True) for _ in range(2)]
        for waiter in waiters:
            waiter.start()
        eventually(lambda: entered() == 2, timeout=WAIT)   # both are waiting in dequeue
        queue.interrupt_waits()
        for waiter in waiters:
            waiter.join(WAIT)
        assert [w.is_alive() for w in waiters] == [False, False]
        assert results == [None, None]
        mail = make_mail()
        queue.enqueue(mail)
        item = queue.dequeue(timeout=WAIT)
        assert item is not None and item.mail.name == mail.name
        item.done(Outcome.SUCCESS)

    def test_retry_comes_back(self, queue):
        mail = make_mail()
        queue.enqueue(mail)
        queue.dequeue(timeout=WAIT).done(Outcome.RETRY)
        again = queue.dequeue(timeout=WAIT)
        assert again is not None and again.mail.name == mail.name
        again.done(Outcome.SUCCESS)

    def test_item_dropped_without_done_comes_back(self, queue):
        mail = make_mail()
        queue.enqueue(mail)
        item = queue.dequeue(timeout=WAIT)
        assert item.mail.name == mail.name
        del item
        gc.collect()
        again = queue.dequeue(timeout=WAIT)
        assert again is not None and again.mail.name == mail.name
        again.done(Outcome.SUCCESS)

    def test_reject_dead_letters(self, queue, dead_letters):
        mail = make_mail()
        queue.enqueue(mail)
        queue.dequeue(timeout=WAIT).done(Outcome.REJECT)
        assert queue.dequeue(timeout=SHORT) is None
        assert mail.name in dead_letters(queue)
        assert [v.mail.name for v in queue.browse()] == []

    def test_done_twice_is_an_error(self, queue):
        queue.enqueue(make_mail())
        item = queue.dequeue(timeout=WAIT)
        item.done(Outcome.SUCCESS)
        with pytest.raises(MailQueueError):
            item.done(Outcome.SUCCESS)

    # ------------------------------------------------------------------ delays
    def test_delayed_mail_is_not_dequeued_before_its_delay(self, queue):
        delayed, immediate = make_mail(), make_mail()
        start = time.monotonic()
        queue.enqueue(delayed, delay=timedelta(seconds=1.5))
        queue.enqueue(immediate)
        first = queue.dequeue(timeout=WAIT)
        assert first.mail.name == immediate.name
        first.done(Outcome.SUCCESS)
        second = queue.dequeue(timeout=WAIT)
        assert second is not None and second.mail.name == delayed.name
        assert time.monotonic() - start >= 1.5  # never handed out before it was due
        second.done(Outcome.SUCCESS)

    def test_flush_makes_delayed_mails_due(self, queue):
        mail = make_mail()
        queue.enqueue(mail, delay=timedelta(hours=1))
        assert queue.dequeue(timeout=SHORT) is None
        [view] = queue.browse()
        assert view.next_delivery is not None and view.next_delivery > datetime.now(UTC) + timedelta(minutes=30)
        assert queue.flush() == 1
        item = queue.dequeue(timeout=WAIT)
        assert item is not None and item.mail.name == mail.name
        [view] = queue.browse()  # still enqueued (not done), now due
        assert view.next_delivery is None
        item.done(Outcome.SUCCESS)
        assert queue.flush() == 0

    def test_a_consumer_thread_that_left_holds_no_mail(self, queue):
        def idle_consumer() -> None:
            assert queue.dequeue(timeout=0.3) is None
            queue.release()
        leaving = threading.Thread(target=idle_consumer)
        leaving.start()
        leaving.join()

        queue.enqueue(make_mail())

        assert queue.size() == 1      # not pushed to the thread that left
        item = queue.dequeue(timeout=WAIT)
        assert item is not None
        item.done(Outcome.SUCCESS)

    def test_a_consumer_loop_takes_mail_after_mail_and_leaves_nothing_behind(self, queue):
        names = [make_mail().name for _ in range(3)]
        for name in names:
            queue.enqueue(make_mail(name=name))
        taken: list[str] = []

        def consumer_loop() -> None:
            try:
                while len(taken) < 2:
                    item = queue.dequeue(timeout=WAIT, keep_consuming=True)
                    assert item is not None
                    taken.append(item.mail.name)
                    item.done(Outcome.SUCCESS)
            finally:
                queue.release()   # the third mail may have been pushed to this loop meanwhile
        loop = threading.Thread(target=consumer_loop)
        loop.start()
        loop.join(WAIT)

        assert taken == names[:2]
        left = queue.dequeue(timeout=WAIT)
        assert left is not None and left.mail.name == names[2]
        left.done(Outcome.SUCCESS)
        assert queue.dequeue(timeout=SHORT) is None

    def test_size_counts_due_and_delayed(self, queue):
        queue.enqueue(make_mail())
        queue.enqueue(make_mail())
        queue.enqueue(make_mail(), delay=timedelta(hours=1))
        assert queue.size() == 3
        queue.dequeue(timeout=WAIT).done(Outcome.SUCCESS)
        assert queue.size() == 2

    # ------------------------------------------------------------------ browse and admin
    def test_browse_lists_enqueued_mails_in_order(self, queue):
        mails = [make_mail(), make_mail(), make_mail()]
        for mail in mails:
            queue.enqueue(mail)
        views = list(queue.browse())
        assert [v.mail.name for v in views] == [m.name for m in mails]
        assert len({v.enqueue_id for v in views}) == 3
        assert [v.enqueued_time for v in views] == sorted(v.enqueued_time for v in views)
        assert all(v.next_delivery is None for v in views)
        assert views[0].mail.sender == mails[0].sender and views[0].mail.recipients == mails[0].recipients
        assert views[0].mail.attributes["custom"] == {"n": 1, "l": [1, "a", None]}

    @pytest.mark.parametrize(("field", "value"), [
        (RemoveField.SENDER, "evil@spam.example"),
        (RemoveField.RECIPIENT, "victim@example.com"),
        (RemoveField.NAME, "the-one"),
    ])
    def test_remove_by_field(self, queue, field, value):
        if field is RemoveField.SENDER:
            target = dict(sender=MailAddress.of(value))
        elif field is RemoveField.RECIPIENT:
            target = dict(recipients=[MailAddress.of("other@x.org"), MailAddress.of(value)])
        else:
            target = dict(name=value)
        kept = make_mail()
        removed = [make_mail(**target)] if field is RemoveField.NAME else [make_mail(**target), make_mail(**target)]
        queue.enqueue(removed[0])
        queue.enqueue(kept)
        for mail in removed[1:]:
            queue.enqueue(mail)
        assert queue.remove(field, value) == len(removed)
        assert [v.mail.name for v in queue.browse()] == [kept.name]
        assert drain_names(queue) == [kept.name]  # removed mails are skipped at dequeue
        assert queue.remove(field, value) == 0

    def test_clear(self, queue):
        for _ in range(3):
            queue.enqueue(make_mail())
        queue.enqueue(make_mail(), delay=timedelta(seconds=1))
        assert queue.clear() == 4
        assert list(queue.browse()) == []
        assert drain_names(queue, timeout=2.0) == []
        assert queue.clear() == 0

    def test_names_are_listed(self, factory, queue):
        assert queue.name in factory.list_names()
        assert factory.get(queue.name) is queue

    def test_republish_on_a_healthy_queue_finds_nothing_new_to_lose(self, queue):
        queue.enqueue(make_mail())
        assert queue.republish_not_processed(datetime.now(UTC) - timedelta(days=1)) == 0
