"""Requests that arrive while an action runs for the same key fold into one more run after it; and the
current-quota listener publishes that way: under concurrency fewer events than changes, the newest
usage always last."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from mailserver.events.latest_only import LatestOnly
from mailserver.mailbox.listeners import CurrentQuotaUpdater
from mailserver.mailbox.memory import MemoryQuotaStore
from mailserver.model.address import Username
from mailserver.model.events import Added, MailboxEvent, QuotaUsageUpdatedEvent
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.message import EventMessageMetadata
from mailserver.model.quota import QuotaRoot, QuotaUsage


def wait_until(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


class HeldAction:
    """An action whose first run waits at a gate, so that other requests arrive during it."""

    def __init__(self) -> None:
        self.gate, self.entered = threading.Event(), threading.Event()
        self.runs = 0

    def __call__(self) -> None:
        self.runs += 1
        if self.runs == 1:
            self.entered.set()
            assert self.gate.wait(5)


def test_alone_every_request_runs():
    latest: LatestOnly[str] = LatestOnly()
    runs = []
    for _ in range(3):
        assert latest.run("k", lambda: runs.append(1)) is True
    assert len(runs) == 3 and latest.folded == 0


def test_requests_during_a_run_fold_into_one_more_run_after_it():
    latest: LatestOnly[str] = LatestOnly()
    action = HeldAction()
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(latest.run, "k", action)
        assert action.entered.wait(5)
        assert [latest.run("k", action) for _ in range(4)] == [False] * 4   # folded: return at once
        action.gate.set()
        assert first.result(5) is True
    assert action.runs == 2          # the held run, then one for the four requests
    assert latest.folded == 4


def test_other_keys_do_not_fold():
    latest: LatestOnly[str] = LatestOnly()
    action = HeldAction()
    other = []
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(latest.run, "a", action)
        assert action.entered.wait(5)
        assert latest.run("b", lambda: other.append(1)) is True
        action.gate.set()
        first.result(5)
    assert other == [1] and action.runs == 1


def test_a_failing_run_raises_and_the_key_is_free_again():
    latest: LatestOnly[str] = LatestOnly()

    def fail() -> None:
        raise RuntimeError("broker away")

    with pytest.raises(RuntimeError):
        latest.run("k", fail)
    runs = []
    assert latest.run("k", lambda: runs.append(1)) is True and runs == [1]


# ------------------------------------------------------------------ the current-quota listener
USER = Username.of("bob@example.org")
ROOT = QuotaRoot.for_user(USER)


def added(size: int) -> Added:
    metadata = EventMessageMetadata(uid=1, mod_seq=1, flags=Flags(), size=size, internal_date=datetime.now(UTC),
                                    save_date=None, message_id=MessageId.generate(), thread_id=MessageId.generate())
    return Added(user=USER, path=MailboxPath.inbox(USER), mailbox_id=MailboxId.generate(), added=(metadata,))


class HeldPublisher:
    def __init__(self) -> None:
        self.gate, self.entered = threading.Event(), threading.Event()
        self.published: list[QuotaUsageUpdatedEvent] = []

    def __call__(self, event: MailboxEvent) -> None:
        assert isinstance(event, QuotaUsageUpdatedEvent)
        self.published.append(event)
        if len(self.published) == 1:
            self.entered.set()
            assert self.gate.wait(5)


def test_changes_counted_during_a_publication_are_published_once_with_the_newest_usage():
    quota = MemoryQuotaStore()
    publish = HeldPublisher()
    updater = CurrentQuotaUpdater(quota, publish)
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(updater.handle, added(100))
        assert publish.entered.wait(5)
        for size in (10, 20, 30):
            updater.handle(added(size))     # counted at once, publication folded into the one running
        assert quota.current(ROOT) == QuotaUsage(4, 160)
        assert len(publish.published) == 1
        publish.gate.set()
        first.result(5)
    assert [e.usage for e in publish.published] == [QuotaUsage(1, 100), QuotaUsage(4, 160)]


def test_many_concurrent_changes_end_with_the_exact_usage_published_last():
    quota = MemoryQuotaStore()
    published: list[QuotaUsageUpdatedEvent] = []
    lock = threading.Lock()

    def publish(event: MailboxEvent) -> None:
        time.sleep(0.002)   # a confirmed publish's round trip
        with lock:
            published.append(event)

    updater = CurrentQuotaUpdater(quota, publish)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: updater.handle(added(7)), range(200)))
    assert quota.current(ROOT) == QuotaUsage(200, 1400)
    assert published[-1].usage == QuotaUsage(200, 1400)
    assert len(published) < 200
    assert updater.publications.folded >= 200 - len(published)
