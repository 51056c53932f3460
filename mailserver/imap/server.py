"""The IMAP server: an asyncio stream server whose sessions call the mailbox manager in a thread pool.

``ImapServer`` runs inside an existing event loop (``await start()`` / ``await stop()``);
``ImapServerThread`` runs one in a background thread with its own loop, like
``SmtpServerThread`` (the ``imap`` role of ``mailserver serve``, tests).

Refusals at connection time answer ``* BYE`` and close: beyond ``max_connections`` sessions, beyond
``max_connections_per_ip`` from one client address (the caps SMTP has, ``serving.connection_caps``)
and while the cluster is in maintenance mode (``maintenance()`` true). Logs carry James's MDC
fields ``protocol``=IMAP, ``ip``, ``sessionId`` and, once authenticated, ``user``.

LOGIN and AUTHENTICATE go through the process's ``AuthThrottle`` (``security.auth_throttle``): growing
delays, then ``NO [UNAVAILABLE] Too many authentication failures, try again in N seconds``; none
without one.

Metrics (James's names where they exist): a timer ``IMAP-<COMMAND>`` per command
(``IMAP-FETCH``, ``IMAP-UID FETCH`` ...), the gauges ``imap.request.concurrent.count`` (commands
running) and ``imap.connections`` (open sessions), the meters ``imapConnections``,
``imapConnectionsRefused``, ``imapCommandsBad`` and ``imapCommandsNo``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from mailserver.events.api import EventBus
from mailserver.imap.config import ImapConfig
from mailserver.imap.header_cache import HeaderCache
from mailserver.imap.session import Session
from mailserver.imap.watcher import MailboxWatcher
from mailserver.mailbox.manager import MailboxManager, MailboxState
from mailserver.mailbox.subscriptions import MemorySubscriptionStore, SubscriptionStore
from mailserver.model.mailbox import MailboxPath
from mailserver.observability.metrics import Metrics
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.serving.connection_caps import ConnectionCaps
from mailserver.serving.connections import ConnectionDescription, on_loop
from mailserver.serving.server_thread import AsyncServerThread
from mailserver.serving.tls import reload_certificate
from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)


class ImapServer:
    def __init__(self, config: ImapConfig, manager: MailboxManager, users: UsersRepository | None, *,
                 subscriptions: SubscriptionStore | None = None, maintenance: Callable[[], bool] | None = None,
                 metrics: Metrics | None = None, auth_throttle: AuthThrottle | None = None,
                 bus: EventBus | None = None) -> None:
        """``bus``: where IDLE registers its mailboxes' keys; without it (or while it is down) IDLE polls."""
        self.config = config
        self.manager = manager
        self.users = users
        self.subscriptions = subscriptions or MemorySubscriptionStore()
        self.maintenance = maintenance
        self.bus = bus
        self.headers = HeaderCache()
        self.read_header = self.headers.reader(manager.read_header)
        self.metrics = metrics
        self.auth_throttle = auth_throttle or AuthThrottle.off()
        self.tls_context = config.tls_context()
        self.sessions: set[Session] = set()
        self.caps = ConnectionCaps(config.max_connections, config.max_connections_per_ip)
        self.in_flight = 0
        self.pool: ThreadPoolExecutor | None = None
        self.watcher: MailboxWatcher = MailboxWatcher(self._probe, config.idle_poll_interval, bus)
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port: int | None = None
        if metrics is not None:
            metrics.gauge("imap.request.concurrent.count", lambda: float(self.in_flight), "IMAP commands running")
            metrics.gauge("imap.connections", lambda: float(len(self.sessions)), "Open IMAP sessions")

    async def _probe(self, path: MailboxPath) -> MailboxState:
        assert self.pool is not None
        return await asyncio.get_running_loop().run_in_executor(self.pool, self.manager.mailbox_state, path)

    def count(self, meter: str) -> None:
        if self.metrics is not None:
            self.metrics.meter(meter).inc()

    @contextmanager
    def timed(self, command: str) -> Iterator[None]:
        self.in_flight += 1
        try:
            if self.metrics is None:
                yield
            else:
                with self.metrics.timer(f"IMAP-{command}").time():
                    yield
        finally:
            self.in_flight -= 1

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        session = Session(self, reader, writer)
        self.sessions.add(session)
        self.caps.opened(session.ip)
        self.count("imapConnections")
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await session.run()
        except asyncio.CancelledError:   # server stopping: end quietly (asyncio would log the cancellation)
            session.close()
        finally:
            self.caps.closed(session.ip)
            self.sessions.discard(session)
            if task is not None:
                self._tasks.discard(task)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.pool = ThreadPoolExecutor(self.config.io_threads, thread_name_prefix="imap-io")
        self._server = await asyncio.start_server(self._client, host=self.config.host, port=self.config.port,
                                                  limit=self.config.max_line_length + 2)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("IMAP server listening on %s:%s", self.config.host, self.port)

    # -- WebAdmin's /servers/channels (serving.connections): on this server's loop -------------------
    def reload_certificate(self) -> bool:
        return reload_certificate(self.tls_context, self.config.tls_cert, self.config.tls_key)

    def describe_connections(self) -> list[ConnectionDescription]:
        return on_loop(self._loop, lambda: [s.describe() for s in self.sessions])

    def disconnect(self, usernames: frozenset[str] | None) -> None:
        def close() -> None:
            for session in list(self.sessions):
                if usernames is None or (session.user is not None and session.user.value in usernames):
                    session.close()
        on_loop(self._loop, close)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for session in list(self.sessions):
            session.close()
        await self.watcher.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        await self._server.wait_closed()
        self._server = None
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None
        log.info("IMAP server stopped")


class ImapServerThread(AsyncServerThread):
    """Run an ``ImapServer`` on its own event loop in a daemon thread."""

    kind = "IMAP"
