"""Split an RFC 5322 message into header and body as a stream, and compute its fast view.

James stores a message as two blobs (header, body) plus ``bodyStartOctet``. The split reads
the input in chunks: only the header (bounded) is held in memory, the body is spooled to a
temporary file, so a 50 MB message never sits whole in memory.
"""

from __future__ import annotations

import logging
import re
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32
from typing import IO, BinaryIO

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
MAX_HEADER_BYTES = 1024 * 1024
SPOOL_IN_MEMORY = 1024 * 1024
PREVIEW_LENGTH = 256
PREVIEW_SCAN_BYTES = 1024 * 1024  # the fast view looks at the first MiB only (see preview())


class MalformedMessage(ValueError):
    pass


@dataclass
class SplitMessage:
    header: bytes
    body: IO[bytes]         # positioned at 0, spooled to disk past SPOOL_IN_MEMORY
    body_start_octet: int
    size: int

    def close(self) -> None:
        self.body.close()


def _chunks(source: bytes | BinaryIO | Iterable[bytes]) -> Iterable[bytes]:
    if isinstance(source, bytes | bytearray | memoryview):
        data = bytes(source)
        for i in range(0, len(data), CHUNK):
            yield data[i:i + CHUNK]
    elif hasattr(source, "read"):
        while chunk := source.read(CHUNK):
            yield chunk
    else:
        yield from source


_SEPARATOR = re.compile(rb"\r?\n\r?\n")


_FIELD_LINE = re.compile(rb"[!-9;-~]+[ \t]*:")   # a field name, optional blanks, the colon (mailets/mime.py)


def _end_of_fields(buffer: bytearray) -> int:
    """Offset of the first complete line after the first one that is neither a header field nor a
    continuation line (where readers such as ``mailets/mime.py`` see the body start), or -1."""
    offset = 0
    while (newline := buffer.find(b"\n", offset)) >= 0:
        line = buffer[offset:newline + 1]
        if offset and line[:1] not in (b" ", b"\t") and not _FIELD_LINE.match(line):
            return offset
        offset = newline + 1
    return -1


def split(source: bytes | BinaryIO | Iterable[bytes]) -> SplitMessage:
    """Header = everything up to and including the first empty line; the rest is the body.

    Without an empty line the whole message is header (a header-only message; readers take
    its fields out, ``mailets/mime.py``), up to ``MAX_HEADER_BYTES``: past that, the header
    ends at the first line that is not a field (a body sent without the empty line, which
    SMTP has to accept), and only a message whose first MiB is all fields is refused.
    """
    buffer = bytearray()
    chunks = iter(_chunks(source))
    header_end = -1
    for chunk in chunks:
        buffer += chunk
        match = _SEPARATOR.search(buffer)
        if match:
            header_end = match.end()
            break
        if len(buffer) > MAX_HEADER_BYTES:
            header_end = _end_of_fields(buffer)
            if header_end < 0:
                raise MalformedMessage(f"no end of header within {MAX_HEADER_BYTES} bytes")
            break
    if not buffer:
        raise MalformedMessage("empty message")
    if header_end < 0:  # a message with no body: all header
        header_end = len(buffer)
    header = bytes(buffer[:header_end])
    if b":" not in header.split(b"\n", 1)[0]:
        raise MalformedMessage("the first line is not a header field")
    body = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # owned (closed) by SplitMessage
    body.write(buffer[header_end:])
    for chunk in chunks:
        body.write(chunk)
    size = header_end + body.tell()
    body.seek(0)
    return SplitMessage(header, body, header_end, size)


def preview(raw_prefix: bytes) -> tuple[str, bool]:
    """(preview, has_attachment) from the first bytes of a message; ("", False) at worst, never an error.

    The preview is the first 256 characters of meaningful text (text/plain preferred, HTML
    stripped otherwise), whitespace collapsed, as James's fast view. Only the first MiB is
    parsed: enough for the text part and the MIME headers of the parts that follow it. The
    fast-view listener must not fail on a hostile message (issue 12), hence the bounded walk
    (``leaf_parts`` below) and the catch-all.
    """
    try:
        return _preview(raw_prefix[:PREVIEW_SCAN_BYTES])
    except Exception as exc:  # whatever the input, the listener gets an answer
        log.warning("no preview for an unparseable message (%s: %s)", type(exc).__name__, exc)
        return "", False


def _preview(raw: bytes) -> tuple[str, bool]:
    has_attachment = False
    text_plain: str | None = None
    text_html: str | None = None
    for part in leaf_parts(raw):
        disposition = part.get_content_disposition()
        if disposition == "attachment" or (disposition == "inline" and part.get_filename()):
            has_attachment = True
            continue
        ctype = part.get_content_type()
        if ctype == "text/plain" and text_plain is None:
            text_plain = _text(part)
        elif ctype == "text/html" and text_html is None:
            text_html = _text(part)
        elif not ctype.startswith("text/") and part.get_filename():
            has_attachment = True
    text = text_plain if text_plain is not None else _strip_html(text_html or "")
    return " ".join(text.split())[:PREVIEW_LENGTH], has_attachment


def body_text(raw: bytes, subtype: str) -> str | None:
    """The decoded text of the message's first ``text/<subtype>`` part that is no attachment and not
    inside an attached message (what ``email``'s ``get_body`` picks), over the bounded walk below."""
    for part in leaf_parts(raw, into_messages=False):
        if part.get_content_type() == f"text/{subtype}" and part.get_content_disposition() != "attachment":
            return _text(part)
    return None


def _text(part: Message) -> str:
    """Decoded text; an unknown charset or a broken encoding gives UTF-8 with replacement characters."""
    content = part.get_payload(decode=True)
    if not isinstance(content, bytes):
        return ""
    try:
        return content.decode(part.get_content_charset() or "us-ascii", "replace")
    except (LookupError, ValueError, TypeError):  # unknown charset, or a codec that is not text (e.g. "hex")
        return content.decode("utf-8", "replace")


_SCRIPT_OR_STYLE = re.compile(r"(?i)<(script|style)\b")
_TAG = re.compile(r"<[^<>]*>")  # no '<' inside: linear on a text full of unclosed '<'


def _strip_html(html: str) -> str:
    """Text of an HTML part, script and style blocks dropped; linear time whatever the input."""
    import html as html_lib

    kept, position, lowered = [], 0, html.lower()
    while (start := _SCRIPT_OR_STYLE.search(html, position)) is not None:
        kept.append(html[position:start.start()])
        end = lowered.find(f"</{start.group(1).lower()}", start.end())
        if end < 0:  # never closed: the rest is script
            position = len(html)
            break
        close = html.find(">", end)
        position = len(html) if close < 0 else close + 1
        kept.append(" ")
    kept.append(html[position:])
    return html_lib.unescape(_TAG.sub(" ", "".join(kept)))


# ---------------------------------------------------------------- bounded MIME walk
# Python's ``email`` parser descends multiparts and attached messages recursively, so a tree
# nested a few thousand levels deep raises RecursionError (issue 12), and its parameter parsing
# is quadratic in the length of a header value. This walk splits parts itself, iteratively,
# parses only the headers of each part, descends at most MAX_DEPTH levels (deeper containers are
# opaque), visits at most MAX_PARTS parts and cuts the structural headers to
# MAX_STRUCTURE_HEADER characters (real ones are far shorter). It lives here, not in a module
# of its own, because this file travels alone to the Spark executors (spark_apps/packaging.py).
MAX_DEPTH = 100
MAX_PARTS = 1000
MAX_STRUCTURE_HEADER = 1024
_STRUCTURE_HEADERS = ("Content-Type", "Content-Disposition", "Content-Transfer-Encoding")
_CONTAINED_MESSAGES = ("message/rfc822", "message/global")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_HEADERS = BytesHeaderParser(policy=compat32)  # compat32: structure from plain strings, no lazy header parsing


def leaf_parts(raw: bytes, *, into_messages: bool = True) -> Iterator[Message]:
    """Leaf parts in document order, each with its (undecoded) body as payload; attached messages
    are descended, or yielded as leaves when not ``into_messages``."""
    return (part for part, is_leaf in walk_parts(raw, into_messages=into_messages) if is_leaf)


def walk_parts(raw: bytes, *, into_messages: bool = True) -> Iterator[tuple[Message, bool]]:
    """``leaf_parts`` (paired with True) with, before the parts of each multipart, the multipart
    itself (paired with False) whose payload is its preamble and epilogue: the text outside its
    parts (RFC 2046 5.1.1), which is in the body of the message all the same."""
    stack: list[tuple[bytes, int]] = [(raw, 0)]
    visited = 0
    while stack and visited < MAX_PARTS:
        data, depth = stack.pop()
        visited += 1
        part, body = _parse_part(data)
        ctype = part.get_content_type()
        if part.get_content_maintype() == "multipart" or (into_messages and ctype in _CONTAINED_MESSAGES):
            if depth < MAX_DEPTH:  # deeper containers are skipped: nothing in them counts
                if ctype in _CONTAINED_MESSAGES:
                    children = [body]
                else:
                    children = _children(body, part.get_boundary(), MAX_PARTS - visited)
                    part.set_payload(_outside_parts(body, part.get_boundary()).decode("ascii", "surrogateescape"))
                    yield part, False
                stack.extend((child, depth + 1) for child in reversed(children))
            continue
        part.set_payload(body.decode("ascii", "surrogateescape"))  # as email's parser stores a body
        yield part, True


def _parse_part(data: bytes) -> tuple[Message, bytes]:
    if data.startswith((b"\r\n", b"\n")):  # no header at all: the default text/plain
        header, body = b"", data[data.index(b"\n") + 1:]
    else:
        end = _HEADER_END.search(data)
        header, body = (data, b"") if end is None else (data[:end.start()], data[end.end():])
    part = _HEADERS.parsebytes(header)
    for name in _STRUCTURE_HEADERS:
        value = part.get(name)
        if value is not None and len(str(value)) > MAX_STRUCTURE_HEADER:
            part.replace_header(name, str(value)[:MAX_STRUCTURE_HEADER])
    return part, body


def _children(body: bytes, boundary: str | None, limit: int) -> list[bytes]:
    """The first ``limit`` parts between boundary lines (RFC 2046); a missing close delimiter ends at the end."""
    if not boundary:
        return []  # a multipart without a boundary has no parts we can find
    delimiter = _delimiter(boundary)
    children: list[bytes] = []
    start: int | None = None
    for match in delimiter.finditer(body):
        if len(children) >= limit:
            return children
        if start is not None:
            end = match.start()
            end -= 2 if body[end - 2:end] == b"\r\n" else 1 if body[end - 1:end] == b"\n" else 0
            children.append(body[start:max(start, end)])  # the line break before a delimiter is the delimiter's
        if match.group(1):
            return children  # close delimiter: what follows is the epilogue
        start = match.end() + (1 if body[match.end():match.end() + 1] == b"\n" else 0)
    if start is not None:
        children.append(body[start:])
    return children


def _delimiter(boundary: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?m)^--" + re.escape(boundary.encode("utf-8", "surrogateescape")) + rb"(--)?[ \t]*\r?$")


def _outside_parts(body: bytes, boundary: str | None) -> bytes:
    """The preamble and the epilogue of a multipart body; all of it when no delimiter is found."""
    delimiter = _delimiter(boundary) if boundary else None
    first = delimiter.search(body) if delimiter is not None else None
    if delimiter is None or first is None:
        return body
    close = next((m for m in delimiter.finditer(body, first.start()) if m.group(1)), None)
    return body[:first.start()] + (b"\n" + body[close.end():] if close is not None else b"")
