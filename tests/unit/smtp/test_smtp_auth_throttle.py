"""SMTP AUTH through the authentication throttle, on a real server (port 0).

The guessing client connects from 127.0.0.2 and the account's owner from 127.0.0.1 (both
loopback); the throttle runs on a clock the test moves and records its delays instead of waiting.
"""

from __future__ import annotations

import base64
import smtplib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.queue.memory import MemoryMailQueue
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from mailserver.users.memory import MemoryUsersRepository
from tests.support.auth_throttle import RecordingThrottle, few_failures_config

USER, PASSWORD = "alice@local.test", "s3cret-Passw0rd"
ATTACKER, OWNER = "127.0.0.2", "127.0.0.1"
WINDOW = 300.0
REFUSED = f"454 4.7.0 Too many authentication failures, try again in {int(WINDOW)} seconds"


def plain(password: str, user: str = USER) -> str:
    return "PLAIN " + base64.b64encode(f"\0{user}\0{password}".encode()).decode()


@dataclass
class World:
    port: int
    throttle: RecordingThrottle

    def client(self, source: str) -> smtplib.SMTP:
        client = smtplib.SMTP("127.0.0.1", self.port, timeout=10, source_address=(source, 0))
        client.ehlo("client.test")
        return client

    def auth(self, source: str, password: str) -> str:
        with self.client(source) as client:
            code, text = client.docmd("AUTH", plain(password))
            return f"{code} {text.decode()}"


@pytest.fixture
def world() -> Iterator[World]:
    domains = MemoryDomainList(["local.test"])
    users = MemoryUsersRepository(domains)
    users.add_user(USER, PASSWORD)
    throttle = RecordingThrottle(few_failures_config(WINDOW))
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.local.test", auth_require_tls=False),
                        MemoryMailQueue("spool"), domains, users, metrics=throttle.metrics,
                        auth_throttle=throttle.auth_throttle)
    thread = SmtpServerThread(server).start()
    try:
        yield World(thread.port, throttle)
    finally:
        thread.stop()


def test_failures_on_one_connection_are_delayed_then_refused_with_454(world):
    with world.client(ATTACKER) as client:
        replies = [client.docmd("AUTH", plain(f"guess-{n}")) for n in range(5)]
        assert [code for code, _ in replies] == [535, 535, 535, 454, 454]
        assert f"{replies[-1][0]} {replies[-1][1].decode()}" == REFUSED
        code, _ = client.docmd("AUTH", plain(PASSWORD))
        assert code == 454   # refused without checking the password
    assert world.throttle.delays == [0.5, 1.0]
    assert world.throttle.meter("authenticationRefusals:SMTP") == 3


def test_auth_login_is_throttled_as_plain(world):
    for n in range(3):
        world.auth(ATTACKER, f"guess-{n}")
    with world.client(ATTACKER) as client:
        with pytest.raises(smtplib.SMTPAuthenticationError) as refused:
            client.login(USER, PASSWORD)   # smtplib tries AUTH LOGIN after PLAIN: both refused
    assert refused.value.smtp_code == 454


def test_the_owner_authenticates_from_another_address_while_the_guesser_is_refused(world):
    for n in range(3):
        world.auth(ATTACKER, f"guess-{n}")
    assert world.auth(OWNER, PASSWORD).startswith("235 ")
    assert world.auth(ATTACKER, PASSWORD) == REFUSED


def test_the_refusal_ends_by_itself_once_the_failures_leave_the_window(world):
    for n in range(3):
        world.auth(ATTACKER, f"guess-{n}")
    world.throttle.clock.now += WINDOW - 1
    assert world.auth(ATTACKER, PASSWORD) == "454 4.7.0 Too many authentication failures, try again in 1 second"
    world.throttle.clock.now += 2
    assert world.auth(ATTACKER, PASSWORD).startswith("235 ")
