"""COMPRESS=DEFLATE (RFC 4978): raw DEFLATE both ways after OK, the existing limits on the inflated
commands, bombs and garbage that cost neither memory nor the event loop."""

from __future__ import annotations

import asyncio
import tracemalloc
import zlib

import pytest

from mailserver.imap.compression import InflatingReader
from mailserver.imap.reader import CommandReader, LineTooLong, OverlongLineUnskipped
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from tests.unit.imap.conftest import USER, make_world
from tests.unit.imap.deflate_client import DeflateRaw, deflate, deflater
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login
from tests.unit.smtp.smtp_helpers import insecure_client_context, self_signed

MiB = 1024 * 1024
LINE_LIMIT = 4096


def bomb(megabytes: int) -> bytes:
    """``megabytes`` MiB of 'A' without a line end, in about a KiB per MiB: one fresh compressor's
    sync-flushed block repeated (no back-reference leaves a block, so the copies chain)."""
    block = deflate(deflater(), b"A" * MiB)
    return block * megabytes


@pytest.fixture(scope="module")
def small():
    w = make_world(compress=True, max_append_size=MiB, max_literal_size=1024, max_line_length=LINE_LIMIT)
    try:
        yield w
    finally:
        w.thread.stop()


def compressed_session(world) -> DeflateRaw:
    raw = DeflateRaw(world.port)
    login(raw)
    assert raw.compress(b"z") == b"z OK DEFLATE active\r\n"
    return raw


def test_compress_is_offered_when_configured_and_unknown_otherwise(small, world):
    assert b" COMPRESS=DEFLATE" in RawImap(small.port).greeting
    plain = RawImap(world.port)
    assert b"COMPRESS" not in plain.greeting
    login(plain)
    assert plain.command(b"c", b"COMPRESS DEFLATE")[-1] == b"c BAD Unknown command COMPRESS\r\n"
    assert plain.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n", "still uncompressed"


def test_compress_needs_authentication_and_a_known_mechanism(small):
    raw = RawImap(small.port)
    assert raw.command(b"a", b"COMPRESS DEFLATE")[-1].startswith(b"a BAD COMPRESS is not valid in the not auth")
    login(raw)
    assert raw.command(b"b", b"COMPRESS LZMA")[-1] == b"b BAD Unsupported compression mechanism LZMA\r\n"
    assert raw.command(b"c", b"COMPRESS")[-1].startswith(b"c BAD")
    assert raw.command(b"n", b"NOOP")[-1] == b"n OK NOOP completed\r\n", "still uncompressed"


def test_after_ok_both_ways_are_raw_deflate_and_a_second_compress_is_refused(small):
    raw = compressed_session(small)
    assert raw.command(b"a", b"CAPABILITY")[-1] == b"a OK CAPABILITY completed\r\n"
    described = small.thread.server.describe_connections()
    assert "true" in [d.protocol_specific["isCompressed"] for d in described], "James's channel field"
    assert raw.command(b"b", b"COMPRESS DEFLATE")[-1] == b"b NO [COMPRESSIONACTIVE] DEFLATE is already active\r\n"
    assert raw.command(b"c", b"LOGOUT")[-1] == b"c OK LOGOUT completed\r\n"
    assert raw.closed()


def test_commands_pipelined_behind_compress_are_inflated(small):
    raw = RawImap(small.port)
    login(raw)
    compressor = deflater()
    raw.send(b"z COMPRESS DEFLATE\r\n" + deflate(compressor, b"a NOOP\r\n"))   # one packet: before the OK
    assert raw.line() == b"z OK DEFLATE active\r\n"
    inflate = zlib.decompressobj(-zlib.MAX_WBITS)
    answer = b""
    while b"\r\n" not in answer:
        answer += inflate.decompress(raw.file.read1(4096))   # what came with the OK line first
    assert answer == b"a OK NOOP completed\r\n", "each response is sync-flushed: complete without more input"


def test_literals_append_and_fetch_go_through_the_compressed_stream(small):
    raw = compressed_session(small)
    raw.command(b"c", b"CREATE Lit")
    message = b"Subject: squeezed\r\n\r\n" + b"0123456789abcdef\r\n" * 40_000   # 720 KB, spooled
    raw.send(b"a APPEND Lit {%d}\r\n" % len(message))
    assert raw.line() == b"+ Ready for literal data\r\n"
    raw.send(message + b"\r\n")
    assert raw.until_tagged(b"a")[-1].startswith(b"a OK [APPENDUID")
    note = b"Subject: plus\r\n\r\nnon-synchronizing\r\n"
    raw.send(b"b APPEND Lit {%d+}\r\n" % len(note) + note + b"\r\n")
    assert raw.until_tagged(b"b")[-1].startswith(b"b OK [APPENDUID")
    raw.command(b"s", b"SELECT Lit")
    raw.send(b"f UID FETCH 1:2 BODY.PEEK[]\r\n")
    first = raw.line()
    assert first.endswith(b"{%d}\r\n" % len(message))
    assert raw.file.read(len(message)) == message, "FETCH streams the stored octets through the compressor"
    assert raw.until_tagged(b"f")[-1] == b"f OK FETCH completed\r\n"
    owner = Username.of(USER)
    stored = small.ctx.manager.get_messages(MailboxPath.of(owner, "Lit"))
    assert [small.ctx.manager.read_message(m.message_id) for m in stored] == [message, note]
    raw.command(b"x", b"CLOSE")
    assert raw.command(b"d", b"DELETE Lit")[-1] == b"d OK DELETE completed\r\n"


def test_the_literal_limits_hold_on_inflated_commands(small):
    raw = compressed_session(small)
    raw.send(b"a LIST {2000}\r\n")
    assert raw.line() == b"a BAD [TOOBIG] literal of 2000 octets exceeds the limit of 1024\r\n"
    raw.send(b"b APPEND INBOX {%d+}\r\n" % (3 * MiB))   # never sent: the connection must end
    assert raw.line() == b"b BAD [TOOBIG] literal of 3145728 octets exceeds the limit of 1048576\r\n"
    assert raw.line() == b"* BYE Refused non-synchronizing literal; closing the connection\r\n"
    assert raw.closed()


def test_idle_is_woken_through_the_compressed_stream(small):
    raw = compressed_session(small)
    raw.command(b"c", b"CREATE Idle")
    raw.command(b"s", b"SELECT Idle")
    raw.send(b"i IDLE\r\n")
    assert raw.line() == b"+ idling\r\n"
    other = small.client()
    other.append("Idle", None, None, b"Subject: wake\r\n\r\nup\r\n")
    other.logout()
    assert raw.line() == b"* 1 EXISTS\r\n"
    raw.send(b"DONE\r\n")
    assert raw.until_tagged(b"i")[-1] == b"i OK IDLE terminated\r\n"
    raw.command(b"x", b"CLOSE")
    raw.command(b"d", b"DELETE Idle")


def test_a_decompression_bomb_line_is_refused_and_ends_the_session(small):
    raw = compressed_session(small)
    raw.send_compressed(deflate(deflater(), b"a LIST ") + bomb(16) + deflate(deflater(), b"\r\n"))
    assert raw.line() == b"a BAD [TOOBIG] command line longer than 4096 octets\r\n"
    assert raw.line().startswith(b"* BYE ")


def test_an_overlong_compressed_line_is_refused_without_inflating_the_rest():
    """Skipping the line would inflate the whole bomb (a thousand octets per octet sent): the reader
    stops at the limit, even with more of the line still to come."""
    async def read_bombed() -> LineTooLong:
        stream = asyncio.StreamReader()
        stream.feed_data(deflate(deflater(), b"a LIST ") + bomb(16))   # no end of line, no end of stream
        reader = CommandReader(InflatingReader(stream, LINE_LIMIT + 2), _ignore, max_line_length=LINE_LIMIT,
                               max_literal_size=1024, max_append_size=MiB, max_literal_size_before_login=1024,
                               authenticated=lambda: True)
        reader.skips_overlong_lines = False
        with pytest.raises(OverlongLineUnskipped) as refused:
            await asyncio.wait_for(reader.read_command(), 30)
        return refused.value

    tracemalloc.start()
    try:
        refused = asyncio.run(read_bombed())
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.tag == "a"
    assert peak < 2 * MiB, f"a peak of {peak / MiB:.1f} MiB"


def test_a_plain_overlong_line_is_still_skipped_and_the_session_goes_on():
    async def read_plain() -> tuple[LineTooLong, bytes]:
        stream = asyncio.StreamReader(limit=LINE_LIMIT + 2)   # as the server opens its connections
        stream.feed_data(b"a LIST " + b"A" * (4 * LINE_LIMIT) + b"\r\nb NOOP\r\n")
        stream.feed_eof()
        reader = CommandReader(stream, _ignore, max_line_length=LINE_LIMIT, max_literal_size=1024,
                               max_append_size=MiB, max_literal_size_before_login=1024, authenticated=lambda: True)
        with pytest.raises(LineTooLong) as refused:
            await reader.read_command()
        return refused.value, bytes(await reader.read_line())

    refused, next_line = asyncio.run(read_plain())
    assert refused.tag == "a" and not isinstance(refused, OverlongLineUnskipped) and next_line == b"b NOOP"


async def _ignore(data: bytes) -> None:
    return None


def test_garbage_instead_of_deflate_ends_that_session_only(small):
    raw = compressed_session(small)
    raw.send_compressed(b"\xff" * 64)   # reserved block type: not DEFLATE
    assert raw.closed()
    assert small.client().noop()[0] == "OK"


def test_a_stalled_compressed_client_does_not_hold_the_others(small):
    raw = compressed_session(small)
    half = deflate(deflater(), b"a LIST \"\" *\r\n")
    raw.send_compressed(half[: len(half) // 2])   # then nothing: the server waits for the rest, not the loop
    assert small.client().noop()[0] == "OK"
    raw.send_compressed(half[len(half) // 2:])
    assert raw.until_tagged(b"a")[-1] == b"a OK LIST completed\r\n"


def test_a_cancelled_read_loses_no_inflated_octets():
    """IDLE and the autologout timer cancel reads: what was inflated must stay for the next one."""
    async def cancel_then_read() -> bytes:
        stream = asyncio.StreamReader()
        stream.feed_data(deflate(deflater(), b"a NOOP\r\n"))
        stream.feed_eof()   # a lost line fails at once instead of waiting
        reader = InflatingReader(stream, LINE_LIMIT + 2)
        first = asyncio.ensure_future(reader.readuntil(b"\n"))
        await asyncio.sleep(0)   # the read inflates the line, then yields to the loop
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return await reader.readuntil(b"\n")

    assert asyncio.run(cancel_then_read()) == b"a NOOP\r\n"


def test_compress_after_starttls_deflates_inside_tls(tmp_path):
    cert, key = self_signed(tmp_path)
    w = make_world(compress=True, tls_cert=cert, tls_key=key)
    try:
        raw = DeflateRaw(w.port)
        assert raw.command(b"t", b"STARTTLS") == [b"t OK Begin TLS negotiation now\r\n"]
        raw.starttls(insecure_client_context())
        login(raw)
        assert raw.compress() == b"z OK DEFLATE active\r\n"
        assert raw.command(b"s", b"SELECT INBOX")[-1].startswith(b"s OK [READ-WRITE]")
        raw.send(b"i IDLE\r\n")
        assert raw.line() == b"+ idling\r\n"
        raw.send(b"DONE\r\n")
        assert raw.until_tagged(b"i")[-1] == b"i OK IDLE terminated\r\n"
    finally:
        w.thread.stop()
