"""``HeartbeatKeeper``: services idle connections, never one in use, not at all without heartbeats."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from mailserver.amqp_heartbeats import MIN_PERIOD, HeartbeatKeeper, keeper_period


class FakeConnection:
    def __init__(self) -> None:
        self.is_open = True
        self.serviced = threading.Event()
        self.calls: list[float] = []

    def process_data_events(self, time_limit: float) -> None:
        self.calls.append(time_limit)
        self.serviced.set()


@dataclass(eq=False)
class Link:
    connection: FakeConnection = field(default_factory=FakeConnection)
    lock: threading.Lock = field(default_factory=threading.Lock)


def test_the_period_is_a_quarter_of_the_heartbeat_and_none_without_heartbeats():
    assert keeper_period(60) == 15
    assert keeper_period(0.5) == MIN_PERIOD
    assert keeper_period(0) is None and keeper_period(None) is None


def test_an_idle_connection_is_serviced_without_blocking_one_in_use_is_skipped():
    keeper = HeartbeatKeeper(60)
    idle, busy, closed = Link(), Link(), Link()
    closed.connection.is_open = False
    for link in (idle, busy, closed):
        keeper.add(link)
    try:
        with busy.lock:
            assert keeper.service() == 1
        assert idle.connection.calls == [0] and busy.connection.calls == [] and closed.connection.calls == []
        keeper.discard(idle)
        assert keeper.service() == 1 and busy.connection.calls == [0]
    finally:
        keeper.close()


def test_the_keeper_thread_services_on_its_own():
    keeper = HeartbeatKeeper(1)
    link = Link()
    keeper.add(link)
    try:
        assert link.connection.serviced.wait(timeout=10)
    finally:
        keeper.close()
    # Closed: a new link is not taken any more.
    late = Link()
    keeper.add(late)
    deadline = time.monotonic() + 3 * MIN_PERIOD
    while time.monotonic() < deadline:
        assert late.connection.calls == []
        time.sleep(MIN_PERIOD / 2)


def test_without_heartbeats_nothing_is_serviced():
    keeper = HeartbeatKeeper(0)
    link = Link()
    keeper.add(link)
    assert keeper.service() == 0 and link.connection.calls == []
    keeper.close()
