"""Uid / modseq allocation in one process: threads asking at the same time share one compare-and-set."""

from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mailserver.mailbox.cassandra_messages import ALLOCATION_STRIPES, CassandraMessageStore
from mailserver.mailbox.errors import ConcurrentModification
from mailserver.model.ids import MailboxId


class CounterSession:
    """The two counter tables in memory, with Cassandra's compare-and-set answers; the first CAS
    can be held at a gate so that other threads queue behind it."""

    def __init__(self, hold_first: bool = False, refuse: set[uuid.UUID] = frozenset()) -> None:
        self.values: dict[tuple[str, uuid.UUID], int] = {}
        self.cas: list[tuple[str, uuid.UUID, int]] = []   # (table, mailbox, reserved count)
        self.lock = threading.Lock()
        self.gate, self.entered = threading.Event(), threading.Event()
        self.hold_first, self.refuse = hold_first, refuse
        if not hold_first:
            self.gate.set()

    def one(self, cql: str, params: Any, *, strong: bool = False) -> dict[str, Any] | None:
        table, column = cql.split(" FROM ")[1].split()[0], cql.split()[1]
        value = self.values.get((table, params[0]))
        return None if value is None else {column.lower(): value}

    def execute_lwt(self, cql: str, params: Any) -> bool:   # INSERT ... IF NOT EXISTS
        table = cql.split()[2]
        with self.lock:
            if (table, params[0]) in self.values:
                return False
            self.values[(table, params[0])] = params[1]
            self.cas.append((table, params[0], params[1]))
            return True

    def execute_cas(self, cql: str, params: Any) -> tuple[bool, dict[str, Any]]:   # UPDATE ... IF col = ?
        table, column = cql.split()[1], cql.split()[3]
        new, mailbox, expected = params
        if mailbox in self.refuse:
            raise RuntimeError("Cassandra timed out")
        with self.lock:
            first = not self.cas
            self.cas.append((table, mailbox, new - expected))
        if first and self.hold_first:
            self.entered.set()
            assert self.gate.wait(10)
        with self.lock:
            current = self.values.get((table, mailbox))
            if current != expected:
                return False, {column.lower(): current}
            self.values[(table, mailbox)] = new
            return True, {}


def queue_behind_first(store: CassandraMessageStore, session: CounterSession, calls: list) -> list:
    """The first call's compare-and-set is held; the others queue behind it; then all go on."""
    pool = ThreadPoolExecutor(max_workers=len(calls))
    first = pool.submit(calls[0])
    assert session.entered.wait(5)
    rest = [pool.submit(call) for call in calls[1:]]
    deadline = time.monotonic() + 5
    while store.allocations_waiting < len(calls) - 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert store.allocations_waiting == len(calls) - 1, "the other callers did not queue"
    session.gate.set()
    futures = [first, *rest]
    pool.shutdown(wait=True)
    return [f.result() if f.exception() is None else f.exception() for f in futures]


def warmed(session: CounterSession, mailbox: MailboxId) -> CassandraMessageStore:
    store = CassandraMessageStore(session)   # type: ignore[arg-type]
    assert store.next_uid(mailbox) == 1        # the row exists, the store knows its value
    session.cas.clear()
    return store


def test_threads_asking_together_share_one_compare_and_set_in_the_order_they_asked():
    session, mailbox = CounterSession(hold_first=True), MailboxId(uuid.uuid1())
    store = warmed(session, mailbox)

    results = queue_behind_first(store, session, [lambda: store.next_uid(mailbox)] * 5)

    assert results[0] == 2                        # the first, alone: its own round
    assert sorted(results[1:]) == [3, 4, 5, 6]    # the four queued: one round for all of them
    assert [count for _, _, count in session.cas] == [1, 4]
    assert store.last_uid(mailbox) == 6


def test_a_range_asked_for_is_reserved_whole_within_the_shared_round():
    session, mailbox = CounterSession(hold_first=True), MailboxId(uuid.uuid1())
    store = warmed(session, mailbox)

    results = queue_behind_first(store, session, [lambda: store.next_uid(mailbox),
                                                  lambda: store.next_uid(mailbox, 10),
                                                  lambda: store.next_uid(mailbox)])

    first, ranged, single = results
    assert first == 2
    taken = {*range(ranged, ranged + 10), single}
    assert len(taken) == 11 and taken == set(range(3, 14))   # contiguous, nothing handed out twice
    assert [count for _, _, count in session.cas] == [1, 11]


def test_a_counter_that_fails_fails_its_own_callers_only():
    healthy, broken = MailboxId(uuid.uuid1()), MailboxId(uuid.uuid1())
    session = CounterSession(hold_first=True, refuse={broken.value})
    store = warmed(session, healthy)
    session.values[("messageCounter", broken.value)] = 5
    # Two mailboxes whose counters share a stripe, so their asks can meet in one batch.
    while hash(("messageCounter", broken.value)) % ALLOCATION_STRIPES != \
            hash(("messageCounter", healthy.value)) % ALLOCATION_STRIPES:
        broken = MailboxId(uuid.uuid1())
        session.refuse, session.values[("messageCounter", broken.value)] = {broken.value}, 5

    results = queue_behind_first(store, session, [lambda: store.next_uid(healthy),
                                                  lambda: store.next_uid(broken),
                                                  lambda: store.next_uid(healthy)])

    assert results[0] == 2 and results[2] == 3
    assert isinstance(results[1], RuntimeError)


def test_a_lost_compare_and_set_starts_again_from_the_value_seen():
    session, mailbox = CounterSession(), MailboxId(uuid.uuid1())
    store = warmed(session, mailbox)
    session.values[("messageCounter", mailbox.value)] = 40   # another process allocated meanwhile

    assert store.next_uid(mailbox) == 41
    assert store.next_uid(mailbox, 3) == 42
    assert store.last_uid(mailbox) == 44


def test_exhausted_retries_are_a_concurrent_modification():
    class AlwaysLost(CounterSession):
        def execute_cas(self, cql, params):
            with self.lock:
                self.values[("messageCounter", params[1])] = params[2] + 1   # somebody else always won
            return super().execute_cas(cql, params)

    session, mailbox = AlwaysLost(), MailboxId(uuid.uuid1())
    session.values[("messageCounter", mailbox.value)] = 1
    store = CassandraMessageStore(session)   # type: ignore[arg-type]
    with pytest.raises(ConcurrentModification):
        store.next_uid(mailbox)
