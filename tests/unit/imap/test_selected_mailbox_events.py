"""The selected mailbox follows its events: commands read no listing, the untagged responses come
from the events, and a lost-events signal from the bus makes the session read the mailbox again."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest

from mailserver.events.in_process import InProcessEventBus
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from tests.support.events import eventually
from tests.unit.imap.conftest import World, make_world
from tests.unit.imap.imap_sessions import REPORT
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import INBOX, login


class ReconnectingBus(InProcessEventBus):
    """Every writer dispatches here; ``reconnect`` is what a broker reconnection reports (a new epoch,
    then the notice to the key listeners, as the RabbitMQ key consumer does)."""

    def __init__(self) -> None:
        super().__init__(sees_every_writer=True)
        self.epoch = 1

    def key_delivery_epoch(self) -> int | None:
        return self.epoch

    def reconnect(self) -> None:
        self.epoch += 1
        self.key_listeners.delivery_changed()


@pytest.fixture
def bus() -> ReconnectingBus:
    return ReconnectingBus()


@pytest.fixture
def pushed(bus: ReconnectingBus) -> Iterator[World]:
    w = make_world(bus=bus, idle_poll_interval=60)
    try:
        yield w
    finally:
        w.thread.stop()


@pytest.fixture
def reads(pushed: World, monkeypatch: pytest.MonkeyPatch) -> Counter:
    """The mailbox manager's reads of a mailbox's listing and state (what a session reads to learn
    of changes; the writes' own reads are theirs)."""
    counts: Counter = Counter()
    manager = pushed.ctx.manager
    for name in ("get_messages", "mailbox_state"):
        method = getattr(manager, name)

        def counted(*args, _name=name, _method=method, **kwargs):
            counts[_name] += 1
            return _method(*args, **kwargs)
        monkeypatch.setattr(manager, name, counted)
    return counts


def selected(world: World, messages: int = 2) -> RawImap:
    raw = RawImap(world.port)
    login(raw)   # creates INBOX
    for _ in range(messages):
        world.ctx.manager.append(INBOX, REPORT)
    raw.command(b"s", b"SELECT INBOX")
    return raw


def untagged(lines: list[bytes]) -> list[bytes]:
    return [line for line in lines if line.startswith(b"* ")]


def test_noop_fetch_store_and_search_after_select_read_no_listing_nor_state(pushed, reads):
    raw = selected(pushed)
    reads.clear()

    raw.command(b"n", b"NOOP")
    raw.command(b"f", b"FETCH 1:* (UID FLAGS)")
    raw.command(b"t", b"STORE 1 +FLAGS (\\Flagged)")
    raw.command(b"h", b"SEARCH FLAGGED")

    assert reads == Counter()


def test_without_live_key_delivery_each_command_reads_the_state_as_before(monkeypatch):
    world = make_world(bus=InProcessEventBus(sees_every_writer=False))
    try:
        raw = selected(world)
        counts: Counter = Counter()
        mailbox_state = world.ctx.manager.mailbox_state

        def counted(*args, **kwargs):
            counts["mailbox_state"] += 1
            return mailbox_state(*args, **kwargs)
        monkeypatch.setattr(world.ctx.manager, "mailbox_state", counted)
        raw.command(b"n", b"NOOP")
        assert counts["mailbox_state"] == 1
    finally:
        world.thread.stop()


def test_changes_made_elsewhere_come_as_untagged_responses_from_the_events(pushed, reads):
    raw = selected(pushed, messages=3)
    manager = pushed.ctx.manager
    reads.clear()

    manager.append(INBOX, REPORT, is_delivery=True)
    manager.set_flags(INBOX, Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD, [1])
    assert untagged(raw.command(b"n", b"NOOP")) == [
        b"* 4 EXISTS\r\n", b"* 1 RECENT\r\n", b"* 1 FETCH (FLAGS (\\Seen))\r\n"]
    assert reads == Counter({"get_messages": 1})   # the new message's metadata only, by its uid

    manager.set_flags(INBOX, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, [2])
    manager.expunge(INBOX, [2])
    # No EXPUNGE during FETCH (RFC 3501 7.4.1): message 2 keeps its number until NOOP.
    assert untagged(raw.command(b"f", b"FETCH 3 (UID)")) == [b"* 3 FETCH (UID 3)\r\n"]
    assert untagged(raw.command(b"n2", b"NOOP")) == [b"* 2 EXPUNGE\r\n"]
    assert untagged(raw.command(b"f2", b"FETCH 2 (UID)")) == [b"* 2 FETCH (UID 3)\r\n"]
    assert reads == Counter({"get_messages": 1})


def test_a_lost_events_signal_makes_the_session_read_the_mailbox_again(pushed, bus, reads, monkeypatch):
    raw = selected(pushed)
    with monkeypatch.context() as lost:   # the broker connection is down: key listeners get nothing
        lost.setattr(bus.key_listeners, "run", lambda key, event: None)
        pushed.ctx.manager.append(INBOX, REPORT, is_delivery=True)
    reads.clear()
    assert untagged(raw.command(b"n", b"NOOP")) == []   # nothing pushed, nothing read

    bus.reconnect()

    assert untagged(raw.command(b"n2", b"NOOP")) == [b"* 3 EXISTS\r\n", b"* 1 RECENT\r\n"]
    assert reads["get_messages"] == 1   # one listing (and state reads, as without events)
    reads.clear()
    raw.command(b"n3", b"NOOP")   # events count again in the new stretch
    assert reads == Counter()


def test_idle_reads_the_mailbox_again_when_the_bus_says_it_lost_events(bus, monkeypatch):
    world = make_world(bus=bus, idle_poll_interval=60)   # no timer: the bus's notice wakes IDLE
    try:
        raw = selected(world)
        raw.send(b"i IDLE\r\n")
        assert raw.line() == b"+ idling\r\n"
        with monkeypatch.context() as lost:
            lost.setattr(bus.key_listeners, "run", lambda key, event: None)
            world.ctx.manager.append(INBOX, REPORT, is_delivery=True)

        bus.reconnect()

        assert raw.line() == b"* 3 EXISTS\r\n"
        raw.send(b"DONE\r\n")
        raw.until_tagged(b"i")
    finally:
        world.thread.stop()


class FailingBus(ReconnectingBus):
    """A bus whose key delivery can go down (no epoch, not live), as the RabbitMQ one between connections."""

    def go_down(self) -> None:
        self.epoch, self.sees_every_writer = None, False
        self.key_listeners.delivery_changed()

    def key_delivery_epoch(self) -> int | None:
        return self.epoch


def test_idle_polls_the_mailbox_only_while_the_bus_is_down_and_follows_its_events_again_after(monkeypatch):
    bus = FailingBus()
    world = make_world(bus=bus, idle_poll_interval=0.05)
    try:
        raw = selected(world)
        raw.send(b"i IDLE\r\n")
        assert raw.line() == b"+ idling\r\n"
        bus.go_down()
        # IDLE has read the mailbox again and waits on the watcher (its key listener beside the feed's).
        eventually(lambda: [len(bus.key_listeners.listeners(k)) for k in bus.key_listeners.keys()] == [2], timeout=5)
        with monkeypatch.context() as lost:   # nothing reaches the key listeners meanwhile
            lost.setattr(bus.key_listeners, "run", lambda key, event: None)
            world.ctx.manager.append(INBOX, REPORT, is_delivery=True)
            assert [raw.line(), raw.line()] == [b"* 3 EXISTS\r\n", b"* 1 RECENT\r\n"]   # found by the poll
        assert world.thread.server.watcher.polls >= 1

        bus.sees_every_writer = True
        bus.epoch = 7
        bus.reconnect()   # IDLE reads the mailbox once more and follows its events again: the watcher is left
        eventually(lambda: [len(bus.key_listeners.listeners(k)) for k in bus.key_listeners.keys()] == [1], timeout=5)
        world.ctx.manager.append(INBOX, REPORT, is_delivery=True)

        assert [raw.line(), raw.line()] == [b"* 4 EXISTS\r\n", b"* 2 RECENT\r\n"]
        raw.send(b"DONE\r\n")
        raw.until_tagged(b"i")
    finally:
        world.thread.stop()
