"""IDLE learns of changes from the event bus's key listeners, and polls only while the bus is down."""

from __future__ import annotations

import asyncio
import dataclasses
import time

from mailserver.events.in_process import InProcessEventBus
from mailserver.imap.watcher import MailboxWatcher
from mailserver.model.ids import MailboxId
from tests.support.events import eventually, sample_added
from tests.unit.imap.conftest import PASSWORD, USER, make_world
from tests.unit.imap.imap_sessions import REPORT
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import INBOX


def test_idle_is_woken_by_a_delivery_through_the_bus_at_once_without_polling():
    bus = InProcessEventBus(sees_every_writer=True)
    world = make_world(bus=bus, idle_poll_interval=60)   # a poll would come far too late for the test
    try:
        raw = RawImap(world.port)
        raw.command(b"l", f"LOGIN {USER} {PASSWORD}".encode())
        raw.command(b"s", b"SELECT INBOX")
        raw.send(b"i IDLE\r\n")
        assert raw.line() == b"+ idling\r\n"
        eventually(lambda: bus.key_listeners.keys(), timeout=5)   # the session's mailbox key is registered

        world.ctx.manager.append(INBOX, REPORT, is_delivery=True)   # as LocalDelivery does: not through IMAP
        dispatched = time.monotonic()

        assert raw.line() == b"* 1 EXISTS\r\n"
        assert time.monotonic() - dispatched < 0.1
        assert world.thread.server.watcher.polls == 0
        raw.send(b"DONE\r\n")
        raw.until_tagged(b"i")
        raw.command(b"c", b"CLOSE")
        eventually(lambda: not bus.key_listeners.keys(), timeout=5)   # none selected: the key is unregistered
    finally:
        world.thread.stop()


async def _watch(bus: InProcessEventBus) -> MailboxWatcher:
    async def probe(path: object) -> str:
        return "unchanged"

    watcher = MailboxWatcher(probe, interval=0.005, bus=bus)
    waiting = asyncio.ensure_future(watcher.wait(MailboxId.generate(), "INBOX", "unchanged"))

    async def until(condition) -> None:
        while not condition():
            await asyncio.sleep(0.005)

    await asyncio.wait_for(until(lambda: watcher.skipped_polls >= 3), timeout=5)
    assert watcher.polls == 1   # once, for a change made before the key was bound
    bus.sees_every_writer = False   # the bus is down: back to polling
    await asyncio.wait_for(until(lambda: watcher.polls >= 4), timeout=5)
    waiting.cancel()
    await watcher.close()
    return watcher


def test_a_watch_polls_once_while_the_bus_pushes_and_again_while_it_is_down():
    asyncio.run(_watch(InProcessEventBus(sees_every_writer=True)))


def test_a_bus_event_of_the_watched_mailbox_wakes_its_waiter():
    bus = InProcessEventBus(sees_every_writer=True)
    mailbox = MailboxId.generate()

    async def scenario() -> None:
        async def probe(path: object) -> str:
            return "unchanged"
        watcher = MailboxWatcher(probe, interval=60, bus=bus)
        waiting = asyncio.ensure_future(watcher.wait(mailbox, "INBOX", "unchanged"))
        while not bus.key_listeners.keys():
            await asyncio.sleep(0.005)
        other, mine = sample_added(), sample_added()
        bus.dispatch(other)
        await asyncio.sleep(0)
        assert not waiting.done()
        await asyncio.get_running_loop().run_in_executor(
            None, bus.dispatch, dataclasses.replace(mine, mailbox_id=mailbox))
        await asyncio.wait_for(waiting, timeout=1)
        await watcher.close()

    asyncio.run(scenario())
