"""One mail server per module, in this process, over the session's stack and keyspace.

The server runs every role (SMTP, spooler, outgoing, WebAdmin, IMAP, and JMAP over HTTPS with a
self-signed certificate) on ports of its own, delivers
remote mail to a local aiosmtpd sink through a static MX table, and uses the shipped mailet
chain with test-sized retry delays.
"""

from __future__ import annotations

import smtplib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from include.stack.manager import StackManager
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.runtime.backends import Backends
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from mailserver.settings.node import ROLES
from tests.support.mailserver_process import IsolatedVhost, mailet_container_for_tests, server_env
from tests.support.ports import unused_port
from tests.unit.delivery.delivery_helpers import Sink
from tests.unit.smtp.smtp_helpers import self_signed

pytestmark = pytest.mark.integration


@dataclass
class MailWorld:
    server: Server
    env: dict[str, str]
    sink: Sink
    domain: str

    @property
    def backends(self) -> Backends:
        assert self.server.backends is not None
        return self.server.backends

    @property
    def smtp_port(self) -> int:
        return int(self.env["MAILSERVER_SMTP_PORT"])

    @property
    def jmap_host(self) -> str:
        """``host:port`` of JMAP over HTTPS; its certificate is ``jmap_certificate``."""
        return f"localhost:{self.env['MAILSERVER_JMAP_PORT']}"

    @property
    def jmap_certificate(self) -> str:
        return self.env["MAILSERVER_JMAP_TLS_CERT"]

    def address(self, local: str) -> str:
        return f"{local}@{self.domain}"

    def add_user(self, local: str, password: str = "secret-pw") -> str:
        address = self.address(local)
        self.backends.users.add_user(Username.of(address), password)
        return address

    def smtp(self) -> smtplib.SMTP:
        client = smtplib.SMTP("127.0.0.1", self.smtp_port, timeout=30)
        client.ehlo("client.remote.example")
        return client

    def send(self, sender: str, recipients: list[str], body: str, subject: str = "e2e",
             login: tuple[str, str] | None = None) -> dict[str, Any]:
        message = (f"From: {sender}\r\nTo: {', '.join(recipients)}\r\nSubject: {subject}\r\n"
                   f"Message-ID: <{uuid.uuid4().hex}@client.remote.example>\r\n\r\n{body}\r\n")
        with self.smtp() as client:
            if login:
                client.login(*login)
            return client.sendmail(sender, recipients, message.encode())

    def inbox(self, address: str) -> list[bytes]:
        manager = self.backends.mailbox.manager
        path = MailboxPath.inbox(Username.of(address))
        if not manager.mailbox_exists(path):
            return []
        return [manager.read_message(m.message_id) for m in manager.get_messages(path)]

    def repository(self, name: str) -> list[Any]:
        repo = self.backends.repositories.select(f"cassandra://var/mail/{name}/")
        return [m for m in (repo.retrieve(k) for k in repo.list_keys()) if m is not None]


def eventually(probe: Callable[[], Any], timeout: float = 60.0, interval: float = 0.2) -> Any:
    """Poll until ``probe()`` is truthy; its last value otherwise (the assertion then shows it)."""
    deadline = time.monotonic() + timeout
    value = probe()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = probe()
    return value


@pytest.fixture
def local_stack(stack) -> StackManager:
    """Service control needs the stack this machine runs; external endpoints cannot be stopped."""
    manager = StackManager(log=lambda _m: None)
    if not manager.services["rabbitmq"].health().pid:
        pytest.fail("the backends are not run by the local stack manager: this test stops and restarts them",
                    pytrace=False)
    return manager


@pytest.fixture
def vhost(stack) -> Iterator[IsolatedVhost]:
    with IsolatedVhost(stack, f"e2e-{uuid.uuid4().hex[:8]}") as isolated:
        yield isolated


@pytest.fixture(scope="module")
def mail_world(stack, cassandra, cassandra_config, tmp_path_factory) -> Iterator[MailWorld]:
    tag = uuid.uuid4().hex[:8]
    directory = tmp_path_factory.mktemp("mailflow")
    container = mailet_container_for_tests(directory / "mailetcontainer.yaml")
    cert, key = self_signed(directory)
    with IsolatedVhost(stack, f"e2e-{tag}") as vhost, Sink() as sink:
        env = server_env(stack, vhost.amqp_url, cassandra_config.keyspace, f"mail-{tag}", container,
                         MAILSERVER_MX_STATIC=f"remote.example={sink.address}",
                         MAILSERVER_ROLES=",".join((*ROLES, "jmap")), MAILSERVER_JMAP_PORT=str(unused_port()),
                         MAILSERVER_JMAP_TLS_CERT=str(cert), MAILSERVER_JMAP_TLS_KEY=str(key),
                         MAILSERVER_IMAP_AUTH_REQUIRE_TLS="false")
        server = Server(ServeSettings.from_env(env), env).start()
        try:
            domain = f"e2e-{tag}.test"
            world = MailWorld(server, env, sink, domain)
            world.backends.domains.add(domain)
            yield world
        finally:
            server.stop()
