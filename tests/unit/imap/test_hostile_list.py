"""A LIST pattern chosen to make a backtracking matcher explode answers at once, and SMTP in the same
process keeps serving while a client loops over such patterns (a matcher holding the GIL froze SMTP,
IMAP and WebAdmin alike)."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.queue.memory import MemoryMailQueue
from mailserver.smtp import SmtpConfig, SmtpServer, SmtpServerThread
from tests.unit.imap.conftest import World
from tests.unit.smtp.smtp_helpers import RawClient

LONG_NAME = "a" * 199
HOSTILE = ['"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*ab"', '"%a%a%a%a%a%a%a%a%a%a%a%a%a%a%ab"',
           '"*a%a*a%a*a%a*a%a*a%a*a%a*a%a*ab"', '"' + "*" * 200 + 'b"']


@pytest.fixture
def smtp() -> Iterator[SmtpServerThread]:
    server = SmtpServer(SmtpConfig(port=0, hostname="mx.test"), MemoryMailQueue("spool"), MemoryDomainList(["mx.test"]))
    with SmtpServerThread(server) as thread:
        yield thread


def test_worst_wildcards_are_answered_while_smtp_sessions_complete(world: World, smtp: SmtpServerThread):
    client = world.client()
    assert client.create(LONG_NAME)[0] == "OK"
    answers: list[tuple[str, list]] = []

    def hostile() -> None:
        for _ in range(10):
            for pattern in HOSTILE:
                answers.append(client.list('""', pattern))

    attacker = threading.Thread(target=hostile, daemon=True)
    attacker.start()
    greetings = []
    while attacker.is_alive() or not greetings:
        # Each session has a 10 s socket timeout: a stalled process fails it.
        smtp_client = RawClient(smtp.port)
        greetings.append((smtp_client.reply()[:3], smtp_client.command("EHLO client.test")[:3],
                          smtp_client.command("QUIT")[:3]))
        smtp_client.close()
    attacker.join(timeout=60)
    assert not attacker.is_alive()
    assert set(greetings) == {("220", "250", "221")}
    assert len(answers) == 10 * len(HOSTILE)
    assert all(typ == "OK" and data == [None] for typ, data in answers)
    # The long name itself is still listed by a pattern that matches it.
    assert client.list('""', '"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a"')[1] == [b'(\\HasNoChildren) "." ' + LONG_NAME.encode()]
