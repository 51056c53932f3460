"""Fuzzing the SMTP dialogue of a real server (aiosmtpd with the intake handler, memory adapters): whatever
a client sends, every reply is a well-formed SMTP reply (RFC 5321 4.2: a 3-digit code, ``-`` on every
line but the last, the same code on each, printable text whatever the client's octets it echoes) with an
RFC 3463 enhanced code where ENHANCEDSTATUSCODES promises one, the server closes a session only after
``221`` or ``421``, and a fresh connection is greeted and served afterwards.

The client keeps in step: one line, then its reply. After ``354`` the drawn content is sent, then the
end of data, and one reply is read. A ``334`` makes the next drawn line the AUTH response.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator

import pytest
from hypothesis import event, given

from mailserver.smtp import SmtpServerThread
from tests.unit.fuzz.profiles import budget
from tests.unit.fuzz.smtp_inputs import contents, dialogues
from tests.unit.smtp.smtp_helpers import drain, make_server

REPLY_LINE = re.compile(rb"([2-5][0-5][0-9])([ -]|$)")
ENHANCED = re.compile(r"[245]\.\d{1,3}\.\d{1,3}( |$)")
CLOSING = (b"221", b"421")


class Closed(Exception):
    """The server closed the connection."""


@pytest.fixture(scope="module")
def server() -> Iterator[SmtpServerThread]:
    # The error limits are tested elsewhere: no pause after errors, and no 421 after the 20th, which follows
    # the reply to the command that made it and would race with the next line. No per-address cap: sessions
    # the client closed at the end of an example may still be counted when the next one connects.
    thread, queue = make_server(auth_require_tls=False, error_sleep_time=0, hard_error_limit=None,
                                max_connections_per_ip=None)
    yield thread
    thread.stop()
    drain(queue)


class Client:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.file = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            raise Closed() from None

    def reply(self) -> list[bytes]:
        """The lines of one reply, checked for RFC 5321's shape."""
        lines: list[bytes] = []
        while True:
            try:
                line = self.file.readline()
            except ConnectionResetError:
                line = b""
            if not line:
                raise Closed(lines)
            assert line.endswith(b"\r\n"), f"reply line without CRLF: {line!r}"
            match = REPLY_LINE.match(line)
            assert match is not None, f"not an SMTP reply line: {line!r} (after {lines})"
            assert not lines or match.group(1) == lines[0][:3], f"codes differ in one reply: {[*lines, line]}"
            assert all(0x20 <= octet < 0x7F or octet == 0x09 for octet in line[:-2]), f"not printable: {line!r}"
            lines.append(line[:-2])
            if match.group(2) != b"-":
                return lines

    def close(self) -> None:
        self.file.close()
        self.sock.close()


def assert_enhanced(command: bytes, reply: list[bytes]) -> None:
    """RFC 2034: every 2xx, 4xx, 5xx reply but those to HELO and EHLO starts with a status code of its class."""
    code = reply[0][:3]
    if code[:1] == b"3" or command.split(b" ", 1)[0].upper() in (b"HELO", b"EHLO"):
        return
    for line in reply:
        text = line.decode("utf-8", "replace")
        assert ENHANCED.match(text[4:]) and text[4] == text[0], f"{command!r} -> {reply}"


def converse(client: Client, lines: list[bytes], content: list[bytes]) -> None:
    """Runs the dialogue up to its end or to a reply after which the server closes (221, 421)."""
    greeting = client.reply()
    assert greeting[0].startswith(b"220"), greeting
    last = greeting
    for line in lines:
        client.send(line + b"\r\n")
        last = client.reply()
        assert_enhanced(line, last)
        event(f"reply {last[0][:3].decode()}")   # the codes reached, in the statistics
        if last[0][:3] == b"354":
            client.send(b"".join(c + b"\r\n" for c in content) + b".\r\n")
            last = client.reply()
            assert_enhanced(b"DATA", last)
        if last[0][:3] in CLOSING:
            return


def assert_still_serving(port: int) -> None:
    client = Client(port)
    try:
        assert client.reply()[0].startswith(b"220")
        client.send(b"EHLO fresh.test\r\n")
        assert client.reply()[-1].startswith(b"250 ")
    finally:
        client.close()


@budget(100)
@given(lines=dialogues, content=contents)
def test_every_reply_is_well_formed_and_the_server_keeps_serving(server, lines, content):
    client = Client(server.port)
    try:
        converse(client, lines, content)
    except Closed as closed:
        pytest.fail(f"the server closed the session without 221 or 421 ({closed.args})")
    finally:
        client.close()
    assert_still_serving(server.port)
