"""What a client that has not logged in can cost: small literals, a short idle timeout, a share of the sessions.

Before login nobody is accountable for a connection, so its literals are capped at a few KiB
(refused before the ``+``, nothing read), it is dropped after a minute of silence, and one
address holds at most ``max_connections_per_ip`` sessions (the cap SMTP has).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator

import pytest

from mailserver.imap import ImapConfig
from mailserver.runtime.settings import ServeSettings
from mailserver.serving.connection_caps import ConnectionCaps, Over
from tests.unit.imap.conftest import PASSWORD, USER, World, make_world
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login

KiB, MiB = 1024, 1024 * 1024


@pytest.fixture
def limited() -> Iterator[World]:
    w = make_world(max_literal_size_before_login=1024, idle_timeout_before_login=0.5, max_connections_per_ip=2)
    try:
        yield w
    finally:
        w.thread.stop()


def literal_marker(text: bytes) -> bytes:
    return b"{%d}\r\n" % len(text)


# ------------------------------------------------------------------ literals before login
def test_defaults_and_settings_from_the_environment():
    for config in (ImapConfig(), ServeSettings.from_env({}).imap):
        assert (config.max_literal_size_before_login, config.idle_timeout_before_login,
                config.max_connections_per_ip) == (8 * KiB, 60.0, 50)
    imap = ServeSettings.from_env({"MAILSERVER_IMAP_LITERAL_LIMIT_BEFORE_LOGIN": "2k",
                                   "MAILSERVER_IMAP_IDLE_TIMEOUT_BEFORE_LOGIN_SECONDS": "20",
                                   "MAILSERVER_IMAP_MAX_CONNECTIONS_PER_IP": "7"}).imap
    assert (imap.max_literal_size_before_login, imap.idle_timeout_before_login, imap.max_connections_per_ip) == \
        (2 * KiB, 20.0, 7)
    assert ServeSettings.from_env({"MAILSERVER_IMAP_MAX_CONNECTIONS_PER_IP": "0"}).imap.max_connections_per_ip is None


def test_a_big_literal_before_login_is_refused_at_once_without_continuation():
    w = make_world()   # the defaults: 8 KiB before login, 25 MiB APPEND after
    try:
        raw = RawImap(w.port)
        raw.send(b"a APPEND INBOX {20000000}\r\n")   # nothing follows: a '+' would leave both sides waiting
        assert raw.line() == b"a NO [TOOBIG] literal of 20000000 octets exceeds the limit of 8192 before login\r\n"
        raw.send(b"b LOGIN {9000}\r\n")
        assert raw.line() == b"b BAD [TOOBIG] literal of 9000 octets exceeds the limit of 8192 before login\r\n"
        assert raw.command(b"c", b"NOOP")[-1] == b"c OK NOOP completed\r\n"
    finally:
        w.thread.stop()


def test_a_literal_password_within_the_limit_logs_in(limited):
    raw = RawImap(limited.port)
    raw.send(b"a LOGIN " + USER.encode() + b" " + literal_marker(PASSWORD.encode()))
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(PASSWORD.encode() + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK")


def test_the_whole_command_is_bounded_before_login_not_only_each_literal(limited):
    raw = RawImap(limited.port)
    raw.send(b"a LOGIN {600}\r\n")
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(b"u" * 600 + b" {600}\r\n")
    assert raw.line() == b"a BAD [TOOBIG] literal of 600 octets exceeds the limit of 1024 before login\r\n"
    assert raw.command(b"b", b"NOOP")[-1] == b"b OK NOOP completed\r\n"


def test_after_login_the_append_limit_applies_again(limited):
    raw = RawImap(limited.port)
    login(raw)
    message = b"Subject: after login\r\n\r\n" + b"x" * 5000 + b"\r\n"
    raw.send(b"a APPEND INBOX " + literal_marker(message))
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(message + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK [APPENDUID")


def test_a_non_synchronizing_literal_over_the_limit_before_login_closes_the_connection(limited):
    raw = RawImap(limited.port)
    raw.send(b"a LOGIN {2000+}\r\n")   # over this server's 1024 before login
    assert raw.line() == b"a BAD [TOOBIG] literal of 2000 octets exceeds the limit of 1024 before login\r\n"
    assert raw.line() == b"* BYE Refused non-synchronizing literal; closing the connection\r\n"
    assert raw.closed()


def test_literal_plus_takes_a_non_synchronizing_literal_over_4096_octets_within_the_limit(limited):
    raw = RawImap(limited.port)
    login(raw)
    name = b"n" * 5000   # over LITERAL-'s 4096, within the 64 KiB literal limit after login
    raw.send(b"a CREATE {5000+}\r\n" + name + b"\r\n")
    assert raw.line().startswith(b"a ")   # answered at once: no continuation was awaited
    assert raw.command(b"b", b"NOOP")[-1] == b"b OK NOOP completed\r\n"


# ------------------------------------------------------------------ idle timeout before login
def test_a_silent_client_that_never_logs_in_is_dropped_while_a_logged_in_one_stays(limited):
    logged_in = RawImap(limited.port)
    login(logged_in)
    silent = RawImap(limited.port)
    assert silent.line() == b"* BYE Autologout; no login after 0.5 seconds idle\r\n"   # blocks until it fires
    assert silent.closed()
    assert logged_in.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n"


def test_a_client_that_stops_half_way_through_authenticate_is_dropped(limited):
    raw = RawImap(limited.port)
    raw.send(b"a AUTHENTICATE PLAIN\r\n")
    assert raw.line() == b"+ \r\n"
    assert raw.line() == b"* BYE Autologout; no login after 0.5 seconds idle\r\n"
    assert raw.closed()


def test_authenticate_within_the_timeout_still_works(limited):
    raw = RawImap(limited.port)
    raw.send(b"a AUTHENTICATE PLAIN\r\n")
    assert raw.line() == b"+ \r\n"
    raw.send(base64.b64encode(b"\0" + USER.encode() + b"\0" + PASSWORD.encode()) + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK")


# ------------------------------------------------------------------ sessions per client address
def eventually_greeted(port: int, source: str) -> bytes:
    deadline = time.monotonic() + 5
    while True:
        raw = RawImap(port, source=source)
        if raw.greeting.startswith(b"* OK") or time.monotonic() > deadline:
            return raw.greeting
        raw.close()
        time.sleep(0.05)   # the server has not seen the earlier close yet


def test_one_address_holds_at_most_its_share_of_sessions(limited):
    first, second = RawImap(limited.port), RawImap(limited.port)
    assert first.greeting.startswith(b"* OK") and second.greeting.startswith(b"* OK")
    third = RawImap(limited.port)
    assert third.greeting == b"* BYE [UNAVAILABLE] Too many connections from your address, try again later\r\n"
    assert third.closed()
    other_address = RawImap(limited.port, source="127.0.0.2")
    assert other_address.greeting.startswith(b"* OK"), "another client is still served"
    first.command(b"a", b"LOGOUT")
    assert eventually_greeted(limited.port, "127.0.0.1").startswith(b"* OK"), "a place came back"
    assert second.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n"


def test_connection_caps_count_per_address_and_in_total():
    caps = ConnectionCaps(total=3, per_ip=1)
    caps.opened("10.0.0.1")
    caps.opened("10.0.0.2")
    assert caps.over("10.0.0.2") is None
    caps.opened("10.0.0.1")
    assert caps.over("10.0.0.1") is Over.ADDRESS
    caps.opened("10.0.0.3")
    assert caps.over("10.0.0.3") is Over.TOTAL
    caps.closed("10.0.0.3")
    caps.closed("10.0.0.1")
    assert caps.over("10.0.0.1") is None and caps.count() == 2 and caps.count("10.0.0.1") == 1
