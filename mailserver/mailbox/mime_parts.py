"""Walk the leaf parts of a MIME message without trusting its structure.

Python's ``email`` parser descends multiparts and attached messages recursively, so a tree
nested a few thousand levels deep raises ``RecursionError`` (issue 12), and its parameter
parsing is quadratic in the length of a header value. This walker splits parts itself,
iteratively, parses only the headers of each part, descends at most ``MAX_DEPTH`` levels
(deeper containers are opaque), visits at most ``MAX_PARTS`` parts and cuts the structural
headers to ``MAX_STRUCTURE_HEADER`` characters (real ones are far shorter).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32

MAX_DEPTH = 100
MAX_PARTS = 1000
MAX_STRUCTURE_HEADER = 1024
_STRUCTURE_HEADERS = ("Content-Type", "Content-Disposition", "Content-Transfer-Encoding")
_CONTAINED_MESSAGES = ("message/rfc822", "message/global")
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_HEADERS = BytesHeaderParser(policy=compat32)  # compat32: structure from plain strings, no lazy header parsing


def leaf_parts(raw: bytes) -> Iterator[Message]:
    """Leaf parts in document order, each with its (undecoded) body as payload."""
    stack: list[tuple[bytes, int]] = [(raw, 0)]
    visited = 0
    while stack and visited < MAX_PARTS:
        data, depth = stack.pop()
        visited += 1
        part, body = _parse_part(data)
        ctype = part.get_content_type()
        if part.get_content_maintype() == "multipart" or ctype in _CONTAINED_MESSAGES:
            if depth < MAX_DEPTH:  # deeper containers are skipped: nothing in them counts
                children = [body] if ctype in _CONTAINED_MESSAGES else _children(body, part.get_boundary(),
                                                                                  MAX_PARTS - visited)
                stack.extend((child, depth + 1) for child in reversed(children))
            continue
        part.set_payload(body.decode("ascii", "surrogateescape"))  # as email's parser stores a body
        yield part


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
    delimiter = re.compile(rb"(?m)^--" + re.escape(boundary.encode("utf-8", "surrogateescape")) +
                           rb"(--)?[ \t]*\r?$")
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
