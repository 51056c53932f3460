"""``data.receive``: DATA content read line by line into a spool, refusals decided while reading."""

from __future__ import annotations

import asyncio

import pytest

from mailserver.smtp.data import BAD_LINE_ENDING, TOO_MUCH_DATA, ReceivedData, line_too_long, receive

LINE_LIMIT = 1001


def read(wire: bytes, *, size_limit: int | None = None, strict_crlf: bool = True) -> tuple[ReceivedData, bytes]:
    """(what DATA carried, what is left in the reader after the end of data)."""
    async def run() -> tuple[ReceivedData, bytes]:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)   # the session's reader has the line limit as its own
        reader.feed_data(wire)
        reader.feed_eof()
        received = ReceivedData.spooled(memory=16)
        await receive(reader, received, size_limit=size_limit, line_limit=LINE_LIMIT, strict_crlf=strict_crlf)
        return received, await reader.read()

    return asyncio.run(run())


def test_content_is_dot_unstuffed_and_the_rest_left_unread():
    received, rest = read(b"Subject: x\r\n\r\n..leading dot\r\n.\r\nNOOP\r\n")
    assert received.refusal is None
    assert received.spool.read() == b"Subject: x\r\n\r\n.leading dot\r\n"
    assert received.size == len(b"Subject: x\r\n\r\n.leading dot\r\n")
    assert rest == b"NOOP\r\n"
    received.close()
    assert received.spool is None


@pytest.mark.parametrize(("wire", "kwargs", "refusal"), [
    (b"a\nb\r\n", {}, BAD_LINE_ENDING),
    (b"a\rb\r\n", {}, BAD_LINE_ENDING),
    (b"x" * 1500 + b"\r\n", {}, line_too_long(LINE_LIMIT)),
    (b"x" * (LINE_LIMIT + 1) + b"\r\n", {}, line_too_long(LINE_LIMIT)),
    (b"y" * 60 + b"\r\n", {"size_limit": 50}, TOO_MUCH_DATA),
])
def test_refused_content_is_read_to_its_end_and_not_kept(wire, kwargs, refusal):
    received, rest = read(wire + b"more\r\n.\r\nQUIT\r\n", **kwargs)
    assert received.refusal == refusal
    assert received.spool is None   # dropped as soon as the content was refused
    assert rest == b"QUIT\r\n"      # in step: the end of data was found


def test_bare_line_feeds_are_content_when_not_strict():
    received, _ = read(b"a\nb\r\n.\r\n", strict_crlf=False)
    assert received.refusal is None and received.spool.read() == b"a\nb\r\n"


def test_a_line_of_exactly_the_limit_is_content():
    line = b"." + b"x" * (LINE_LIMIT - 1) + b"\r\n"   # the transparency dot counts, the CRLF does not
    received, rest = read(line + b".\r\nQUIT\r\n")
    assert received.refusal is None
    assert received.spool.read() == line[1:]
    assert rest == b"QUIT\r\n"
