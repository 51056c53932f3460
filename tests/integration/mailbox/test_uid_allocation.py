"""Uid and modseq allocation on Cassandra under concurrent appends to one mailbox."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

import pytest

from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.ids import MailboxId

pytestmark = pytest.mark.integration

THREADS = 8
PER_THREAD = 10


class CountingSession:
    """The real session, counting the outcome of every compare-and-set the store sends."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.outcomes: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)

    def execute_cas(self, cql, params=None):
        applied, row = self._session.execute_cas(cql, params)
        with self._lock:
            self.outcomes["won" if applied else "lost"] += 1
        return applied, row

    def execute_lwt(self, cql, params=None):
        return self.execute_cas(cql, params)[0]


def allocate_concurrently(allocate, threads: int = THREADS) -> list[int]:
    values: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def work() -> None:
        start.wait()
        try:
            for _ in range(PER_THREAD):
                value = allocate()
                with lock:
                    values.append(value)
        except BaseException as error:   # handed to the test thread
            errors.append(error)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    if errors:
        raise errors[0]
    return values


@pytest.mark.parametrize("kind", ["uid", "modseq"])
def test_threads_of_one_process_share_compare_and_sets_and_lose_none(cassandra, kind):
    counting = CountingSession(cassandra)
    store = CassandraMessageStore(counting)
    mailbox = MailboxId(uuid.uuid1())
    allocate = (lambda: store.next_uid(mailbox)) if kind == "uid" else (lambda: store.next_modseq(mailbox))

    values = allocate_concurrently(allocate)

    assert sorted(values) == list(range(1, THREADS * PER_THREAD + 1))
    assert counting.outcomes["lost"] == 0
    # Threads asking together share one compare-and-set (tests/unit/mailbox/test_allocation_batching.py
    # shows it deterministically): never more rounds than values.
    assert 1 <= counting.outcomes["won"] <= THREADS * PER_THREAD


def test_two_processes_racing_on_one_mailbox_still_get_distinct_uids(cassandra):
    mailbox = MailboxId(uuid.uuid1())
    first, second = CassandraMessageStore(cassandra), CassandraMessageStore(cassandra)
    values: list[int] = []
    lock = threading.Lock()

    def run(store: CassandraMessageStore) -> None:
        got = allocate_concurrently(lambda: store.next_uid(mailbox), threads=4)
        with lock:
            values.extend(got)

    racers = [threading.Thread(target=run, args=(store,)) for store in (first, second)]
    for r in racers:
        r.start()
    for r in racers:
        r.join(timeout=120)

    assert sorted(values) == list(range(1, 2 * 4 * PER_THREAD + 1))
    assert first.last_uid(mailbox) == 2 * 4 * PER_THREAD
