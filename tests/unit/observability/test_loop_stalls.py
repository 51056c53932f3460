"""The event-loop stall watchdog: a loop kept busy is logged with what it ran, and health degrades."""

from __future__ import annotations

import asyncio
import imaplib
import logging
import time
from collections.abc import Callable

import pytest

from mailserver.observability.health import Status
from mailserver.observability.loop_stalls import LoopStallHealthCheck, LoopStallWatchdog
from mailserver.serving.server_thread import AsyncServerThread
from tests.unit.imap.conftest import PASSWORD, USER


class IdleServer:
    port: int | None = 4242

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


def wait_for(condition: Callable[[], bool], deadline: float = 10.0) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("condition not reached before the deadline")
        time.sleep(0.02)


def busy_loop_work(watchdog: LoopStallWatchdog, seconds: float) -> None:
    with watchdog.running("A001 LIST \"\" \"*a*a*ab\""):
        time.sleep(seconds)   # blocking on purpose: what a command must never do on the loop


@pytest.fixture
def watchdog() -> LoopStallWatchdog:
    return LoopStallWatchdog(interval=0.05, threshold=0.2, memory=3.0)


def test_a_blocked_loop_is_logged_with_its_command_and_health_degrades_then_recovers(watchdog, caplog):
    check = LoopStallHealthCheck(watchdog)
    caplog.set_level(logging.WARNING, "mailserver.observability.loop_stalls")
    with AsyncServerThread(IdleServer(), watchdog=watchdog) as thread:
        assert check.check().status is Status.HEALTHY
        future = asyncio.run_coroutine_threadsafe(asyncio.sleep(0), thread.loop)
        future.result(5)
        thread.loop.call_soon_threadsafe(busy_loop_work, watchdog, 1.0)
        wait_for(lambda: watchdog.stalls == 1)
        during = check.check()
        assert during.status is Status.DEGRADED
        assert "server:4242" in (during.cause or "") and "LIST" in (during.cause or "")
        stalled = [r.getMessage() for r in caplog.records if "stalled for" in r.getMessage()]
        assert len(stalled) == 1
        assert 'A001 LIST "" "*a*a*ab"' in stalled[0] and "busy_loop_work" in stalled[0]
        wait_for(lambda: any("turned again" in r.getMessage() for r in caplog.records))
        assert check.check().status is Status.DEGRADED   # within the memory after the stall
        wait_for(lambda: check.check().status is Status.HEALTHY)
        assert watchdog.stalls == 1


def test_a_loop_that_keeps_turning_is_never_reported(watchdog, caplog):
    with AsyncServerThread(IdleServer(), watchdog=watchdog) as thread:
        for _ in range(20):
            asyncio.run_coroutine_threadsafe(asyncio.sleep(0.01), thread.loop).result(5)
            time.sleep(0.02)
        watchdog.check_now()
    assert watchdog.stalls == 0 and watchdog.last_stall() is None


def test_a_stopped_server_is_no_stall(watchdog):
    with AsyncServerThread(IdleServer(), watchdog=watchdog):
        pass
    time.sleep(0.5)   # longer than threshold + interval: a stopped loop that were still watched would be reported
    watchdog.check_now()
    assert watchdog.stalls == 0


def test_an_imap_command_that_holds_its_loop_is_named_in_the_stall_log(watchdog, caplog, monkeypatch):
    from mailserver.imap import ImapServerThread
    from mailserver.imap.session import Session
    from tests.unit.imap.conftest import make_world

    async def noop_holding_the_loop(self, command, args):
        time.sleep(1.0)   # the bug the watchdog exists to reveal: blocking work on the loop
        return "OK NOOP completed"

    monkeypatch.setattr(Session, "cmd_noop", noop_holding_the_loop)
    caplog.set_level(logging.WARNING, "mailserver.observability.loop_stalls")
    world = make_world()
    world.thread.stop()   # the world's own thread reports to the process watchdog; serve again on ours
    with ImapServerThread(world.thread.server, watchdog=watchdog) as thread:
        client = imaplib.IMAP4("127.0.0.1", thread.port, timeout=10)
        client.login(USER, PASSWORD)
        assert client.noop()[0] == "OK"
        wait_for(lambda: watchdog.stalls == 1)
        client.logout()
    stalled = [r.getMessage() for r in caplog.records if "stalled for" in r.getMessage()]
    assert len(stalled) == 1
    assert "NOOP" in stalled[0] and "IMAP session" in stalled[0] and "noop_holding_the_loop" in stalled[0]
