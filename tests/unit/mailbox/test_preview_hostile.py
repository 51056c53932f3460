"""The fast view never fails on a hostile message (issue 12): deep trees, broken MIME, garbage."""

from __future__ import annotations

import random
import time

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.events.in_process import InProcessEventBus
from mailserver.mailbox.content import MAX_DEPTH, MAX_PARTS, leaf_parts, preview
from mailserver.mailbox.wiring import memory_context
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath

LEAF = b"Content-Type: text/plain\r\n\r\nhello deep\r\n"
HEAD = b"From: a@example.com\r\nSubject: deep\r\n"


def nested(depth: int, leaf: bytes = LEAF) -> bytes:
    """``depth`` multiparts, each holding the next one, the text at the bottom."""
    out = bytearray(HEAD)
    for i in range(depth):
        out += b'Content-Type: multipart/mixed; boundary="b%d"\r\n\r\n--b%d\r\n' % (i, i)
    out += leaf
    for i in reversed(range(depth)):
        out += b"\r\n--b%d--\r\n" % i
    return bytes(out)


def quick(raw: bytes) -> tuple[str, bool]:
    started = time.monotonic()
    result = preview(raw)
    assert time.monotonic() - started < 5, "hostile input must not make the preview slow"
    return result


def test_a_5000_level_tree_gives_an_empty_preview_instead_of_a_recursion_error():
    assert quick(nested(5000)) == ("", False)


def test_text_within_the_depth_limit_is_found_and_beyond_it_is_opaque():
    assert quick(nested(MAX_DEPTH - 1)) == ("hello deep", False)
    assert quick(nested(MAX_DEPTH + 1)) == ("", False)
    shallow_attachment = (b"Content-Type: multipart/mixed; boundary=T\r\n\r\n--T\r\n" + nested(5000)[len(HEAD):] +
                          b"\r\n--T\r\nContent-Type: text/plain\r\n\r\nafter the bomb\r\n--T\r\n"
                          b"Content-Type: application/pdf; name=x.pdf\r\n\r\n%PDF\r\n--T--\r\n")
    assert quick(shallow_attachment) == ("after the bomb", True)


def test_deeply_attached_messages_are_bounded_too():
    raw = b"Subject: x\r\n" + b"Content-Type: message/rfc822\r\n\r\n" * 5000 + b"Content-Type: text/plain\r\n\r\ninner"
    assert quick(raw) == ("", False)
    assert quick(b"Subject: x\r\n" + b"Content-Type: message/rfc822\r\n\r\n" * 3 + b"\r\ninner") == ("inner", False)


def test_truncated_and_missing_boundaries():
    no_close = b"Content-Type: multipart/mixed; boundary=M\r\n\r\n--M\r\nContent-Type: text/plain\r\n\r\ncut off here"
    assert quick(no_close) == ("cut off here", False)
    cut_in_boundary = (b"Content-Type: multipart/mixed; boundary=LONGBOUNDARY\r\n\r\n--LONGBOUNDARY\r\n\r\nfirst\r\n"
                       b"--LONGBOUN")
    assert quick(cut_in_boundary) == ("first --LONGBOUN", False)
    assert quick(b"Content-Type: multipart/mixed\r\n\r\n--x\r\n\r\nno boundary parameter") == ("", False)
    assert quick(b"Content-Type: multipart/mixed; boundary=\"\"\r\n\r\n--\r\n\r\nempty") == ("", False)
    reused = b"Content-Type: multipart/mixed; boundary=B\r\n\r\n" + \
        b"--B\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n" * 3000 + b"--B--"
    assert quick(reused) == ("", False)


def test_binary_garbage_and_degenerate_inputs():
    rng = random.Random(12)
    for _ in range(5):
        quick(bytes(rng.getrandbits(8) for _ in range(200_000)))
    for raw in (b"", b"\x00" * 1000, b"\r\n" * 500_000, b"\xff\xfe\xfd", b"--\r\n--\r\n", b":" * 100_000):
        text, attachment = quick(raw)
        assert isinstance(text, str) and attachment is False


def test_huge_header_lines():
    assert quick(b"Subject: " + b"a" * (1 << 20) + b"\r\n\r\nbody") == ("", False)  # body beyond the scanned MiB
    assert quick(b"X-Long: " + b"a" * 900_000 + b"\r\n\r\nbody text") == ("body text", False)
    semicolons = b"Content-Type: multipart/mixed; boundary=\"" + b";" * 900_000 + b"\r\n\r\nbody"
    assert quick(semicolons) == ("", False)
    quotes = b"Content-Type: text/plain; a=\"" + b";\"x" * 300_000 + b"\r\n\r\nbody"
    assert quick(quotes) == ("body", False)
    disposition = b"Content-Disposition: attachment; filename=\"" + b"\\\";" * 300_000 + b"\r\n\r\nx"
    assert quick(disposition) == ("", True)


def test_broken_encodings_and_charsets_fall_back_to_text():
    for cte, charset, body in ((b"base64", b"utf-8", b"!!!@@@"), (b"x-uuencode", b"utf-8", b"begin 644 x\r\n!!!"),
                               (b"quoted-printable", b"hex", b"=ZZ=4"), (b"8bit", b"punycode", b"\xff-abc"),
                               (b"7bit", b"no-such-charset", b"caf\xe9")):
        raw = b"Content-Type: text/plain; charset=" + charset + b"\r\nContent-Transfer-Encoding: " + cte + \
            b"\r\n\r\n" + body
        text, attachment = quick(raw)
        assert isinstance(text, str) and not attachment


def test_html_that_would_make_regexes_backtrack():
    assert quick(b"Content-Type: text/html\r\n\r\n" + b"<" * 900_000)[0].startswith("<<<")
    assert quick(b"Content-Type: text/html\r\n\r\nvisible" + b"<script" * 120_000) == ("visible", False)
    assert quick(b"Content-Type: text/html\r\n\r\n<p>a</p><StYlE>x{}</style >b<script>c</SCRIPT>d") == ("a b d", False)


def test_the_walk_stops_after_max_parts():
    many = b"Content-Type: multipart/mixed; boundary=B\r\n\r\n" + b"--B\r\n\r\nx\r\n" * 200_000
    assert len(list(leaf_parts(many))) == MAX_PARTS - 1  # the root counts as one part
    assert quick(many) == ("x", False)


def test_the_fast_view_listener_survives_the_5000_level_message():
    bus = InProcessEventBus()
    ctx = memory_context(MemoryBlobStore(), bus)
    inbox = MailboxPath.inbox(Username.of("bob@example.com"))
    ctx.manager.create_mailbox(inbox)
    result = ctx.manager.append(inbox, nested(5000))
    assert ctx.fast_view.retrieve(result.id.message_id) == ("", False)
    assert not bus.dead_letters.contain_events()


@pytest.mark.parametrize("depth", [1, 2, 10])
def test_ordinary_nesting_still_reads_the_text(depth):
    assert preview(nested(depth)) == ("hello deep", False)
