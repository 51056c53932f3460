"""An IMAP server on an ephemeral loopback port over the memory mailbox layer, for imaplib and imapclient."""

from __future__ import annotations

import imaplib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.events.api import EventBus
from mailserver.events.in_process import InProcessEventBus
from mailserver.imap import ImapConfig, ImapServer, ImapServerThread
from mailserver.mailbox.wiring import MailboxContext, memory_context
from mailserver.observability.metrics import Metrics
from mailserver.users.memory import MemoryUsersRepository

DOMAIN = "imap.test"
USER, PASSWORD = f"alice@{DOMAIN}", "s3cret-Passw0rd"
OTHER = f"bob@{DOMAIN}"


@dataclass
class World:
    ctx: MailboxContext
    users: MemoryUsersRepository
    thread: ImapServerThread
    metrics: Metrics
    maintenance: list[bool]

    @property
    def port(self) -> int:
        return self.thread.port

    def client(self, login: bool = True) -> imaplib.IMAP4:
        client = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        if login:
            client.login(USER, PASSWORD)
        return client


def make_world(bus: EventBus | None = None, write_guard: Callable[[], None] | None = None, **config) -> World:
    ctx = memory_context(MemoryBlobStore(), bus, write_guard=write_guard)
    users = MemoryUsersRepository(MemoryDomainList([DOMAIN]))
    users.add_user(USER, PASSWORD)
    users.add_user(OTHER, PASSWORD)
    metrics = Metrics()
    maintenance = [False]
    settings = {"port": 0, "auth_require_tls": False, "idle_poll_interval": 0.2, **config}
    server = ImapServer(ImapConfig(**settings), ctx.manager, users, maintenance=lambda: maintenance[0],
                        metrics=metrics, bus=ctx.bus)
    thread = ImapServerThread(server).start()
    return World(ctx, users, thread, metrics, maintenance)


@pytest.fixture
def world() -> Iterator[World]:
    w = make_world()
    try:
        yield w
    finally:
        w.thread.stop()


@contextmanager
def evented_world() -> Iterator[World]:
    """A world as the imap role runs: the selected mailbox follows its events (a bus that sees every
    writer, no polling), so what a command reads or writes is its own."""
    w = make_world(bus=InProcessEventBus(sees_every_writer=True), idle_poll_interval=60)
    try:
        yield w
    finally:
        w.thread.stop()
