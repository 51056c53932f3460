"""Replies to hostile input, found by the fuzzers: octets a client sends and a reply echoes (a HELO name, an
unknown command) come back with their control characters escaped, never raw; a session closed for sending
too many unknown commands is told so with 421 (RFC 5321 3.8), not a 502 and a silent close."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mailserver.smtp import SmtpServerThread
from tests.unit.smtp.smtp_helpers import RawClient, drain, make_server


@pytest.fixture
def server() -> Iterator[SmtpServerThread]:
    thread, queue = make_server(error_sleep_time=0)
    yield thread
    thread.stop()
    drain(queue)


def raw_reply(client: RawClient, line: bytes) -> list[bytes]:
    """The reply's lines as octets (``RawClient.reply`` decodes them)."""
    client.send(line + b"\r\n")
    lines = []
    while True:
        while b"\r\n" not in client.buffer:
            chunk = client.sock.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed after {lines}")
            client.buffer += chunk
        reply_line, client.buffer = client.buffer.split(b"\r\n", 1)
        lines.append(reply_line)
        if reply_line[3:4] != b"-":
            return lines


@pytest.mark.parametrize(("line", "echoed"), [
    (b"EHLO a\x00b", rb"Hello a\x00b ["),
    (b"EHLO a\rb", rb"Hello a\rb ["),
    (b"HELO x\x1b[31mred", rb"Hello x\x1b[31mred ["),
    (b"\x01FOO", rb'command "\x01FOO" not recognized'),
])
def test_control_characters_echoed_in_a_reply_are_escaped(server, line, echoed):
    client = RawClient(server.port)
    try:
        assert client.reply().startswith("220")
        reply = raw_reply(client, line)
        assert echoed in reply[0], reply
        assert all(0x20 <= octet < 0x7F for reply_line in reply for octet in reply_line), reply
    finally:
        client.close()


def test_too_many_unknown_commands_end_the_session_with_421(server):
    client = RawClient(server.port)
    try:
        assert client.reply().startswith("220")
        replies = [client.command("FOO") for _ in range(5)]
        assert all(reply.startswith("500 5.5.1") for reply in replies[:4]), replies
        assert replies[4] == "421 4.7.0 mx.local.test Error: too many unrecognized commands"
        client.sock.settimeout(10)
        assert client.sock.recv(1) == b""
    finally:
        client.close()
