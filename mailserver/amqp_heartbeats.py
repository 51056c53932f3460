"""Heartbeats for idle pooled pika connections.

pika's ``BlockingConnection`` sends its heartbeats, and reads the broker's, only inside a pika
call: ``process_data_events`` runs the connection's timers. A pooled connection that nobody uses
for a while (the SMTP threads' publishing connections on a quiet night) sends nothing, so
RabbitMQ closes it after the heartbeat timeout ("missed heartbeats from client") and the next user
finds a reset socket: pika logs ``ERROR ... Connection reset by peer`` while the pool reconnects.

A ``HeartbeatKeeper`` thread visits the connections registered with it every quarter of the
heartbeat timeout and runs ``process_data_events(time_limit=0)`` on each one nobody is using:
pika sends a heartbeat when one is due and takes in what the broker sent (pika's documented way
of keeping a blocking connection alive is to call ``process_data_events`` regularly).

``BlockingConnection`` is not thread-safe, so each registered connection comes with a lock that
its users hold while they use it. The keeper only tries the lock: a connection in use is skipped,
its user's own pika calls service its heartbeats meanwhile.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

log = logging.getLogger(__name__)

# Never busier than this, whatever the heartbeat (a heartbeat of 1 s would otherwise mean 4 visits/s).
MIN_PERIOD = 0.25


class Serviced(Protocol):
    """What the keeper needs of a pooled connection."""

    @property
    def lock(self) -> threading.RLock | threading.Lock: ...

    @property
    def connection(self) -> Any: ...   # pika.BlockingConnection


def keeper_period(heartbeat: float | None) -> float | None:
    """Seconds between two visits: a quarter of the timeout, so a heartbeat (due every half timeout) is
    never late by more than a quarter; None when heartbeats are off (nothing to keep alive)."""
    if not heartbeat or heartbeat <= 0:
        return None
    return max(heartbeat / 4, MIN_PERIOD)


class HeartbeatKeeper:
    def __init__(self, heartbeat: float | None, name: str = "amqp-heartbeats") -> None:
        self.period = keeper_period(heartbeat)
        self.name = name
        self._links: set[Serviced] = set()
        self._guard = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, link: Serviced) -> None:
        """Keep ``link`` alive from now on (the thread starts with the first link)."""
        if self.period is None:
            return
        with self._guard:
            if self._stop.is_set():
                return
            self._links.add(link)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()

    def discard(self, link: Serviced) -> None:
        with self._guard:
            self._links.discard(link)

    def service(self) -> int:
        """One visit of every registered connection not in use; how many were serviced."""
        with self._guard:
            links = list(self._links)
        serviced = 0
        for link in links:
            if not link.lock.acquire(blocking=False):
                continue   # in use: its user's pika calls service it
            try:
                if link.connection.is_open:
                    link.connection.process_data_events(time_limit=0)
                    serviced += 1
            except Exception:   # lost: its user finds the connection closed and opens another
                log.debug("servicing the heartbeats of an AMQP connection failed", exc_info=True)
            finally:
                link.lock.release()
        return serviced

    def _run(self) -> None:
        assert self.period is not None
        while not self._stop.wait(self.period):
            self.service()

    def close(self) -> None:
        with self._guard:
            self._stop.set()
            thread, self._thread = self._thread, None
            self._links.clear()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
