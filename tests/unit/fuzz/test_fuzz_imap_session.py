"""Fuzzing a logged-in IMAP session of a real server (memory mailbox layer) with hostile commands: every
command, whatever its arguments, gets an answer that is not ``NO [SERVERBUG]`` (an exception a handler
did not expect) nor ``* BYE`` (the session given up), and the session keeps answering.

After each command the client sends ``SELECT INBOX`` and reads up to its tagged OK: that resynchronizes
the stream whatever the command's tag was (an untagged ``* BAD`` for a malformed one) and restores the
state every example starts from. The mailbox holds ordinary and hostile messages (nested far past the
MIME limits, cut short), refilled when a command moved or expunged them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from mailserver.model.mailbox import MailboxPath
from tests.unit.fuzz.imap_inputs import commands, grammar_commands, line_octets
from tests.unit.fuzz.mime_inputs import HOSTILE_MESSAGES, messages
from tests.unit.fuzz.profiles import budget
from tests.unit.imap.conftest import PASSWORD, USER, World, make_world
from tests.unit.imap.raw_client import RawImap

RESYNC = b"zz9"


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    # No per-address cap: connections of earlier examples may still be counted when the next one connects.
    w = make_world(max_append_size=4 * 1024 * 1024, max_connections_per_ip=None)
    try:
        yield w
    finally:
        w.thread.stop()


@pytest.fixture(scope="module")
def client(world: World) -> Iterator[RawImap]:
    client = RawImap(world.port, timeout=60)
    assert client.command(b"l1", b'LOGIN "%s" "%s"' % (USER.encode(), PASSWORD.encode()))[-1].startswith(b"l1 OK")
    yield client
    client.close()


def refill(world: World) -> None:
    """The hostile messages back in INBOX when commands moved or expunged some."""
    manager, inbox = world.ctx.manager, MailboxPath.inbox(USER)
    if len(manager.get_messages(inbox)) < len(HOSTILE_MESSAGES):
        for message in HOSTILE_MESSAGES:
            manager.append(inbox, message)


def exchange(client: RawImap, wire: bytes) -> list[bytes]:
    """The server's lines for ``wire``, up to the tagged answer of the SELECT that follows it."""
    client.send(wire + RESYNC + b" SELECT INBOX\r\n")
    return client.until_tagged(RESYNC)


def assert_answered(wire: bytes, lines: list[bytes]) -> None:
    tag = wire.split(b" ", 1)[0]
    for line in lines:   # what the fuzzed command got, in the statistics (--hypothesis-show-statistics)
        words = line.split(b" ", 3)
        if len(words) > 2 and words[0] in (tag, b"*") and words[1] in (b"OK", b"NO", b"BAD") and tag != RESYNC:
            event(f"{words[1].decode()} {words[2].decode('ascii', 'replace')[:12] if words[1] != b'OK' else ''}")
    failures = [line for line in lines if b"[SERVERBUG]" in line or line.startswith(b"* BYE")]
    assert not failures, f"{wire!r} -> {failures}"
    assert lines[-1].startswith(RESYNC + b" OK"), f"{wire!r} -> {lines[-6:]}"


@budget(150)
@given(command=commands(max_depth=120))
def test_every_hostile_command_gets_an_answer_and_the_session_goes_on(world, client, command):
    assume(command.wire_safe)
    refill(world)
    assert_answered(command.wire, exchange(client, command.wire))


@budget(150)
@given(wire=grammar_commands(messages()))
def test_every_command_of_the_grammar_with_hostile_values_gets_an_answer(world, client, wire):
    refill(world)
    assert_answered(wire, exchange(client, wire))


PREFIXES = [b"", b"r1 ", b"r1 FETCH 1 ", b"r1 UID FETCH 1:* ", b"r1 SEARCH ", b"r1 UID SEARCH CHARSET UTF-8 ",
            b"r1 STORE 1 +FLAGS ", b"r1 COPY 1 ", b"r1 LIST ", b"r1 STATUS INBOX ", b"r1 APPEND INBOX ", b"r1 CREATE ",
            b"r1 SELECT ", b"r1 ENABLE ", b"r1 ID "]


@budget(100)
@given(prefix=st.sampled_from(PREFIXES), octets=line_octets)
def test_any_line_of_octets_gets_an_answer_and_the_session_goes_on(world, client, prefix, octets):
    line = prefix + octets.replace(b"\n", b"").rstrip(b"}") + b"\r\n"   # no literal marker: nothing would follow
    refill(world)
    assert_answered(line, exchange(client, line))


BEFORE_LOGIN = [b"", b"p1 ", b"p1 LOGIN ", b"p1 LOGIN alice ", b"p1 AUTHENTICATE PLAIN ", b"p1 AUTHENTICATE ",
                b"p1 ID ", b"p1 CAPABILITY ", b"p1 STARTTLS ", b"p1 SELECT ", b"p1 APPEND INBOX "]


@budget(100)
@given(prefix=st.sampled_from(BEFORE_LOGIN), octets=line_octets)
def test_any_line_before_login_gets_an_answer_and_the_session_goes_on(world, prefix, octets):
    line = prefix + octets.replace(b"\n", b"").rstrip(b"}")
    assume(b"AUTHENTICATE" not in prefix or line[len(prefix):].strip())   # without it, a continuation is asked
    client = RawImap(world.port, timeout=60)
    try:
        client.send(line + b"\r\n" + RESYNC + b" CAPABILITY\r\n")
        assert_answered(line, client.until_tagged(RESYNC))
    finally:
        client.close()
