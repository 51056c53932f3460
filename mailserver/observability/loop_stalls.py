"""Event-loop stall watchdog: a loop that stops turning is logged with what it runs, and health degrades.

The SMTP and IMAP servers each run an event loop in a thread of their own. One request that keeps
its loop busy (CPU-heavy work done inline, a blocking call) stalls every other session of that
protocol, and, if it holds the GIL, the whole process. Such work must never run on a loop; this
watchdog is how an operator learns that some did: each watched loop bumps a heartbeat every
``interval``; a thread of the watchdog compares the heartbeats with the clock and, once a loop
is late by more than ``threshold``, logs a WARNING naming the loop, the command it was running
(as told by :meth:`LoopStallWatchdog.running`, else the name of the task it runs: the IMAP
session names its task after the command) and the innermost frames of its thread. The health
check is degraded while a loop is stalled and for ``memory`` seconds after the last stall.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from mailserver.observability.health import HealthCheck, Result

log = logging.getLogger(__name__)

EVENT_LOOPS = "EventLoops"   # ours: James has no such check


@dataclass(frozen=True)
class Stall:
    loop: str
    seconds: float
    activity: str | None
    ended_at: float | None   # monotonic; None while it lasts


@dataclass
class _Watched:
    loop: asyncio.AbstractEventLoop
    beat: float
    thread_id: int | None = None
    activity: str | None = None
    stalled_since: float | None = None
    reported: bool = False


class LoopStallWatchdog:
    def __init__(self, *, interval: float = 0.2, threshold: float = 2.0, memory: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.interval, self.threshold, self.memory = interval, threshold, memory
        self._clock = clock
        self._lock = threading.Lock()
        self._loops: dict[str, _Watched] = {}
        self._last: Stall | None = None
        self._count = 0
        self._thread: threading.Thread | None = None

    # -- the watched loop's side ----------------------------------------------------------------------
    def watch(self, name: str, loop: asyncio.AbstractEventLoop) -> None:
        """Watch ``loop`` (call from any thread once it runs or is about to run)."""
        with self._lock:
            self._loops[name] = _Watched(loop, self._clock())
        loop.call_soon_threadsafe(self._beat, name)
        self._ensure_thread()

    def unwatch(self, name: str) -> None:
        with self._lock:
            self._loops.pop(name, None)

    def _beat(self, name: str) -> None:
        with self._lock:
            watched = self._loops.get(name)
            if watched is None:
                return
            watched.beat = self._clock()
            watched.thread_id = threading.get_ident()
        watched.loop.call_later(self.interval, self._beat, name)

    @contextlib.contextmanager
    def running(self, activity: str) -> Iterator[None]:
        """Tell the watchdog what the current loop's thread runs, for the stall log (e.g. an IMAP command)."""
        ident = threading.get_ident()
        with self._lock:
            watched = [w for w in self._loops.values() if w.thread_id == ident]
            for w in watched:
                w.activity = activity
        try:
            yield
        finally:
            with self._lock:
                for w in watched:
                    if w.activity == activity:
                        w.activity = None

    # -- the watchdog's side ----------------------------------------------------------------------------
    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._watch_forever, name="loop-stall-watchdog", daemon=True)
            self._thread.start()

    def _watch_forever(self) -> None:
        while True:
            time.sleep(self.interval)
            self.check_now()

    def check_now(self) -> None:
        """Compare every heartbeat with the clock once (the watchdog thread calls it each interval)."""
        now = self._clock()
        reports: list[tuple[str, float, str | None, int | None]] = []
        with self._lock:
            for name, watched in self._loops.items():
                late = now - watched.beat
                if late > self.threshold + self.interval:
                    if watched.stalled_since is None:
                        watched.stalled_since = watched.beat
                    self._last = Stall(name, now - watched.stalled_since, watched.activity, None)
                    if not watched.reported:
                        watched.reported = True
                        self._count += 1
                        reports.append((name, late, watched.activity, watched.thread_id))
                elif watched.stalled_since is not None:
                    seconds = watched.beat - watched.stalled_since
                    self._last = Stall(name, seconds, watched.activity, now)
                    log.warning("event loop %s turned again after a stall of %.1f s", name, seconds)
                    watched.stalled_since, watched.reported = None, False
        for name, late, activity, thread_id in reports:
            activity = activity or self._current_task_name(name)
            log.warning("event loop %s stalled for %.1f s, running %s; its thread is at:\n%s", name, late,
                        activity or "no command it was told of", _frames_of(thread_id))

    def _current_task_name(self, name: str) -> str | None:
        """The name of the task the stalled loop is running: protocols name it after the command."""
        with self._lock:
            watched = self._loops.get(name)
        if watched is None:
            return None
        try:
            task = asyncio.current_task(watched.loop)   # a read of asyncio's table of running tasks
        except RuntimeError:
            return None
        return task.get_name() if task is not None else None

    @property
    def stalls(self) -> int:
        """How many stalls began since start (the metric)."""
        with self._lock:
            return self._count

    def last_stall(self) -> Stall | None:
        with self._lock:
            return self._last


def _frames_of(thread_id: int | None, depth: int = 6) -> str:
    if thread_id is None:
        return "  (unknown thread)"
    # sys._current_frames is the documented way to see another thread's stack (faulthandler uses it too).
    frame = sys._current_frames().get(thread_id)
    if frame is None:
        return "  (thread gone)"
    return "".join(traceback.format_stack(frame)[-depth:]).rstrip()


class LoopStallHealthCheck(HealthCheck):
    """Degraded while an event loop is stalled, and for the watchdog's ``memory`` seconds after."""

    name = EVENT_LOOPS

    def __init__(self, watchdog: LoopStallWatchdog, clock: Callable[[], float] = time.monotonic) -> None:
        self.watchdog = watchdog
        self._clock = clock

    def check(self) -> Result:
        stall = self.watchdog.last_stall()
        if stall is None:
            return self.healthy()
        running = f" running {stall.activity}" if stall.activity else ""
        if stall.ended_at is None:
            return self.degraded(f"event loop {stall.loop} stalled for {stall.seconds:.1f} s{running}")
        ago = self._clock() - stall.ended_at
        if ago <= self.watchdog.memory:
            return self.degraded(f"event loop {stall.loop} was stalled {stall.seconds:.1f} s{running}, "
                                 f"{ago:.0f} s ago")
        return self.healthy()


# One per process: the loops of every server thread report to it, the health check reads it.
WATCHDOG = LoopStallWatchdog()
