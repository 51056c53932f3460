"""Bad input gets a clear BAD/NO/BYE, costs no memory, and the server keeps answering everyone else."""

from __future__ import annotations

import gc
import time

import psutil
import pytest

from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from tests.unit.imap.conftest import USER, make_world
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login

MiB = 1024 * 1024


@pytest.fixture
def small():
    w = make_world(max_append_size=MiB, max_literal_size=1024, max_line_length=4096)
    try:
        yield w
    finally:
        w.thread.stop()


@pytest.mark.parametrize("command, answer", [
    (b"a1 FETCH", b"a1 BAD FETCH is not valid in the authenticated state"),
    (b"a2 SELECT", b"a2 BAD missing mailbox name"),
    (b"a3 LIST (", b"a3 BAD unbalanced parenthesis: missing ')'"),
    (b'a4 CREATE "unterminated', b"a4 BAD quoted string not terminated"),
    (b"a5 STATUS INBOX (BOGUS)", b"a5 BAD unknown STATUS item(s) BOGUS"),
    (b"a6 SEARCH ALL", b"a6 BAD SEARCH is not valid in the authenticated state"),
    (b"(a7 NOOP", b"* BAD missing or malformed tag"),
    (b"a8 CREATE Bad&Name", b"a8 BAD invalid modified UTF-7"),
    (b"a9 CREATE Bad..Name", b"a9 NO [CANNOT] mailbox name 'Bad..Name' has an empty hierarchy level"),
])
def test_malformed_commands_get_a_precise_answer_and_the_session_goes_on(small, command, answer):
    raw = RawImap(small.port)
    login(raw)
    lines = raw.command(command.split(b" ")[0].lstrip(b"("), command[command.index(b" ") + 1:]) \
        if not command.startswith(b"(") else [raw.send(command + b"\r\n") or raw.line()]
    assert lines[-1].startswith(answer), lines
    assert raw.command(b"z", b"NOOP")[-1] == b"z OK NOOP completed\r\n"


def test_selected_state_errors(small):
    raw = RawImap(small.port)
    login(raw)
    raw.command(b"s", b"SELECT INBOX")
    assert raw.command(b"a", b"FETCH 1 FLAGS")[-1].startswith(b"a BAD message sequence number out of range")
    assert raw.command(b"b", b"FETCH 1:* (FLAGS BODY[BOGUS])")[-1].startswith(b"b BAD")
    assert raw.command(b"c", b"STORE 1 +FLAGS (\\Bogus)")[-1].startswith(b"c BAD")
    assert raw.command(b"d", b"UID STORE 1 XFLAGS (\\Seen)")[-1] == b"d BAD unknown STORE item XFLAGS\r\n"
    assert raw.command(b"e", b"SEARCH CHARSET KOI8-R ALL")[-1] == \
        b"e NO [BADCHARSET (UTF-8 US-ASCII)] charset KOI8-R is not supported\r\n"
    assert raw.command(b"f", b"SEARCH FROBNICATE")[-1] == b"f BAD SEARCH: unknown key FROBNICATE\r\n"
    assert raw.command(b"g", b"UID FETCH 1:* FLAGS")[-1] == b"g OK FETCH completed\r\n"


def test_a_synchronizing_literal_over_the_limit_is_refused_before_it_is_sent(small):
    raw = RawImap(small.port)
    login(raw)
    raw.send(b"a APPEND INBOX {%d}\r\n" % (2 * MiB))
    assert raw.line() == b"a NO [TOOBIG] literal of 2097152 octets exceeds the limit of 1048576\r\n"
    raw.send(b"b LOGIN {2000}\r\n")
    assert raw.line() == b"b BAD [TOOBIG] literal of 2000 octets exceeds the limit of 1024\r\n"
    assert raw.command(b"c", b"NOOP")[-1] == b"c OK NOOP completed\r\n"


def test_literal_plus_takes_non_synchronizing_literals_within_the_limit_and_closes_on_a_bigger_one(small):
    raw = RawImap(small.port)
    login(raw)
    message = b"Subject: small\r\n\r\n" + b"x" * 30_000 + b"\r\n"   # over LITERAL-'s 4096
    raw.send(b"a APPEND INBOX {%d+}\r\n" % len(message) + message + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK [APPENDUID")
    raw.send(b"b APPEND INBOX {%d+}\r\n" % (3 * MiB))   # its octets never sent: the server must not wait for them
    assert raw.line() == b"b BAD [TOOBIG] literal of 3145728 octets exceeds the limit of 1048576\r\n"
    assert raw.line() == b"* BYE Refused non-synchronizing literal; closing the connection\r\n"
    assert raw.closed()
    stored = small.ctx.manager.get_messages(MailboxPath.inbox(Username.of(USER)))
    assert [small.ctx.manager.read_message(m.message_id) for m in stored] == [message]


def test_an_append_within_the_limit_is_spooled_and_stored_byte_identical(small):
    raw = RawImap(small.port)
    login(raw)
    message = b"Subject: big\r\n\r\n" + b"0123456789abcdef\r\n" * 50_000   # 900 KB
    raw.send(b"a APPEND INBOX {%d}\r\n" % len(message))
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(message + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK [APPENDUID")
    stored = small.ctx.manager.get_messages(MailboxPath.inbox(Username.of(USER)))[0]
    assert small.ctx.manager.read_message(stored.message_id) == message


def test_an_overlong_line_is_skipped_whole(small):
    raw = RawImap(small.port)
    login(raw)
    raw.send(b"a LOGIN " + b"x" * 100_000 + b"\r\n")
    assert raw.line() == b"a BAD [TOOBIG] command line longer than 4096 octets\r\n"
    assert raw.command(b"b", b"NOOP")[-1] == b"b OK NOOP completed\r\n"


def test_a_malformed_message_is_refused(small):
    raw = RawImap(small.port)
    login(raw)
    raw.send(b"a APPEND INBOX {9}\r\n")
    raw.line()
    raw.send(b"no header\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a NO [PARSE] malformed message")


def test_hundred_idle_connections_and_floods_keep_memory_bounded_and_others_served():
    # 100 sessions from 127.0.0.1: the per-address cap lifted, memory is what this test is about.
    w = make_world(max_append_size=MiB, max_literal_size=1024, max_line_length=4096, max_connections_per_ip=None)
    process = psutil.Process()
    try:
        warm = [RawImap(w.port) for _ in range(5)]
        for raw in warm:
            raw.close()
        gc.collect()
        before = process.memory_info().rss
        idle = [RawImap(w.port) for _ in range(100)]
        assert all(raw.greeting.startswith(b"* OK") for raw in idle)
        idlers = []
        for raw in idle[:20]:   # twenty of them in IDLE on INBOX: one poll per mailbox, not per session
            login(raw)
            raw.command(b"s", b"SELECT INBOX")
            raw.send(b"i IDLE\r\n")
            assert raw.line() == b"+ idling\r\n"
            idlers.append(raw)
        attacker = RawImap(w.port)
        login(attacker)
        for round_ in range(20):   # oversize literals (refused unsent) and lines (read, never buffered)
            attacker.send(b"a%d APPEND INBOX {%d}\r\n" % (round_, 2 * MiB))
            assert attacker.line().startswith(b"a%d NO [TOOBIG]" % round_)
            attacker.send(b"b LIST " + b"z" * 2 * MiB + b"\r\n")
            assert attacker.line().startswith(b"b BAD [TOOBIG]")
        other = RawImap(w.port)
        login(other)
        assert other.command(b"n", b"LIST \"\" *")[-1] == b"n OK LIST completed\r\n"
        polls = w.thread.server.watcher.polls
        time.sleep(1.0)   # a second of IDLE: the polls counted over it are the rate asserted
        assert w.thread.server.watcher.polls - polls <= 10, "IDLE polls once per mailbox per interval"
        gc.collect()
        growth = process.memory_info().rss - before
        print(f"RSS growth with 100 sessions, 20 idling, 40 MiB of overlong lines: {growth / MiB:.1f} MiB")
        # 100 sessions and 40 MiB of overlong lines: a few MiB at most (a leak of the floods would be 40+ MiB).
        assert growth < 30 * MiB, f"RSS grew by {growth / MiB:.1f} MiB"
        for raw in idlers:
            raw.send(b"DONE\r\n")
            assert raw.until_tagged(b"i")[-1] == b"i OK IDLE terminated\r\n"
        for raw in idle:
            raw.close()
    finally:
        w.thread.stop()
