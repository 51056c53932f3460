"""IMAP LOGIN and AUTHENTICATE through the authentication throttle, on a real server (port 0).

The guessing client connects from 127.0.0.2 and the account's owner from 127.0.0.1 (both
loopback); the throttle runs on a clock the test moves and records its delays instead of waiting.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.domains.memory import MemoryDomainList
from mailserver.imap import ImapConfig, ImapServer, ImapServerThread
from mailserver.mailbox.wiring import memory_context
from mailserver.users.memory import MemoryUsersRepository
from tests.support.auth_throttle import RecordingThrottle, few_failures_config

USER, PASSWORD = "alice@imap.test", "s3cret-Passw0rd"
ATTACKER, OWNER = "127.0.0.2", "127.0.0.1"
WINDOW = 300.0


class Client:
    def __init__(self, port: int, source: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        self.file = self.sock.makefile("rb")
        self.file.readline()   # greeting
        self.tags = 0

    def command(self, text: str) -> str:
        """The tagged reply (untagged lines skipped); '* BYE ...' when the server closes first."""
        self.tags += 1
        tag = f"a{self.tags}"
        self.sock.sendall(f"{tag} {text}\r\n".encode())
        while True:
            line = self.file.readline().decode()
            if not line:
                raise ConnectionError("closed by the server")
            if line.startswith(tag + " "):
                return line[len(tag) + 1:].strip()

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@dataclass
class World:
    port: int
    throttle: RecordingThrottle

    def login(self, source: str, password: str, *, user: str = USER) -> str:
        client = Client(self.port, source)
        try:
            return client.command(f'LOGIN "{user}" "{password}"')
        finally:
            client.close()


@pytest.fixture
def world() -> Iterator[World]:
    ctx = memory_context(MemoryBlobStore())
    users = MemoryUsersRepository(MemoryDomainList(["imap.test"]))
    users.add_user(USER, PASSWORD)
    throttle = RecordingThrottle(few_failures_config(WINDOW))
    server = ImapServer(ImapConfig(port=0, auth_require_tls=False), ctx.manager, users, metrics=throttle.metrics,
                        auth_throttle=throttle.auth_throttle)
    thread = ImapServerThread(server).start()
    try:
        yield World(thread.port, throttle)
    finally:
        thread.stop()


def hammer(world: World, guesses: int) -> list[str]:
    return [world.login(ATTACKER, f"guess-{n}") for n in range(guesses)]


def test_guesses_from_one_address_are_delayed_then_refused_as_unavailable(world):
    replies = hammer(world, 5)
    assert replies[:3] == ["NO [AUTHENTICATIONFAILED] Authentication failed"] * 3
    assert replies[3:] == [f"NO [UNAVAILABLE] Too many authentication failures, try again in {int(WINDOW)} seconds"] * 2
    assert world.throttle.delays == [0.5, 1.0]
    assert world.login(ATTACKER, PASSWORD).startswith("NO [UNAVAILABLE]")   # refused without checking the password
    assert world.throttle.meter("authenticationFailures:IMAP") == 3
    assert world.throttle.meter("authenticationRefusals:IMAP") == 3


def test_the_owner_logs_in_from_another_address_while_the_guesser_is_refused(world):
    hammer(world, 3)
    assert world.login(OWNER, PASSWORD).startswith("OK ")
    assert world.login(ATTACKER, PASSWORD).startswith("NO [UNAVAILABLE]")


def test_the_refusal_ends_by_itself_once_the_failures_leave_the_window(world):
    hammer(world, 3)
    world.throttle.clock.now += WINDOW - 1
    assert world.login(ATTACKER, PASSWORD).startswith("NO [UNAVAILABLE]")
    world.throttle.clock.now += 2
    assert world.login(ATTACKER, PASSWORD).startswith("OK ")


def test_authenticate_plain_is_throttled_as_login(world):
    hammer(world, 3)
    client = Client(world.port, ATTACKER)
    try:
        token = base64.b64encode(f"\0{USER}\0{PASSWORD}".encode()).decode()
        assert client.command(f"AUTHENTICATE PLAIN {token}").startswith("NO [UNAVAILABLE]")
    finally:
        client.close()


def test_one_connection_still_ends_after_three_failures_refusals_included(world):
    hammer(world, 3)
    client = Client(world.port, ATTACKER)
    try:
        for _ in range(3):
            assert client.command(f'LOGIN "{USER}" "x"').startswith("NO [UNAVAILABLE]")
        assert client.file.readline() == b""   # closed after its BYE
    finally:
        client.close()
