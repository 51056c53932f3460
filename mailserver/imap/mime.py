"""A MIME tree over a message's raw bytes, for BODYSTRUCTURE and byte-exact BODY[section] fetches.

Python's ``email`` package re-serializes what it parses, so section contents would not be the
octets the client appended. Here every part keeps offsets into the original bytes: its MIME
header (up to and including the blank line) and its body; ``email`` only parses header *fields*.
Offsets, not copies: the tree holds the message once, however deep it is.

Part numbering follows RFC 3501 §6.4.5: the parts of a multipart are 1, 2, ...; a non-multipart
message has one part, 1, its body; a ``message/rfc822`` part's own parts continue below it; a
leaf body part (an image in a multipart) has no part below it, as with James.

The tree is bounded as every MIME walk of the server (``mailbox/content.py``): it is built without
recursion, containers are descended at most ``MAX_DEPTH`` levels and at most ``MAX_PARTS`` parts
are made. A container left undescended (too deep, past the part budget, or a multipart whose
parts cannot be found) is an *opaque* part described as text/plain, so BODYSTRUCTURE stays a
valid response and stays within depth for the code that recurses over the tree. Structural
header values are cut as there, since ``email``'s parameter parsing is quadratic in their length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32

from mailserver.mailbox.content import MAX_DEPTH, MAX_PARTS, MAX_STRUCTURE_HEADER

_BLANK = re.compile(rb"\r?\n\r?\n")
_PARSER = BytesHeaderParser(policy=compat32)
_STRUCTURE_HEADERS = ("Content-Type", "Content-Disposition")


@dataclass(eq=False)
class Part:
    raw: bytes = field(repr=False)   # the whole message, shared by every part
    start: int                       # where the part's MIME header starts
    body_start: int                  # where its body starts (after the blank line)
    end: int
    fields: Message                  # parsed header fields (raw values)
    children: list[Part] = field(default_factory=list)
    message: Part | None = None      # the encapsulated message of a message/rfc822 part
    opaque: bool = False             # a container not descended: described as text/plain

    @property
    def header(self) -> bytes:
        """The MIME header (or the message header) including the blank line."""
        return self.raw[self.start:self.body_start]

    @property
    def body(self) -> bytes:
        return self.raw[self.body_start:self.end]

    @property
    def body_size(self) -> int:
        return self.end - self.body_start

    @property
    def body_lines(self) -> int:
        """Line ends in the body: a last line without one is not counted (as James and Dovecot do)."""
        return self.raw.count(b"\n", self.body_start, self.end)

    @property
    def content_type(self) -> tuple[str, str]:
        if self.opaque:
            return "text", "plain"
        value = self.fields.get_content_type()   # text/plain when absent or malformed (or message/rfc822 in digest)
        main, _, sub = value.partition("/")
        return main.lower(), sub.lower()

    @property
    def is_multipart(self) -> bool:
        return self.content_type[0] == "multipart"

    def param(self, name: str) -> str | None:
        value = self.fields.get_param(name)
        if isinstance(value, tuple):   # RFC 2231 encoded
            from email.utils import collapse_rfc2231_value

            return collapse_rfc2231_value(value)
        return value


def split_header(raw: bytes, start: int = 0, end: int | None = None) -> int:
    """Where the body of ``raw[start:end]`` starts: after the blank line; at ``end`` when there is none."""
    end = len(raw) if end is None else end
    if raw.startswith(b"\r\n", start, end):   # no header at all
        return start + 2
    if raw.startswith(b"\n", start, end):
        return start + 1
    match = _BLANK.search(raw, start, end)
    return end if match is None else match.end()


def _part(raw: bytes, start: int, end: int, default_type: str) -> Part:
    body_start = split_header(raw, start, end)
    fields = _PARSER.parsebytes(raw[start:body_start])
    for name in _STRUCTURE_HEADERS:
        value = fields.get(name)
        if value is not None and len(str(value)) > MAX_STRUCTURE_HEADER:
            fields.replace_header(name, str(value)[:MAX_STRUCTURE_HEADER])
    if default_type != "text/plain" and "content-type" not in fields:
        fields.set_default_type(default_type)
    return Part(raw, start, body_start, end, fields)


def parse(raw: bytes) -> Part:
    """The bounded tree of ``raw`` (see the module docstring); never recurses, whatever the input."""
    root = _part(raw, 0, len(raw), "text/plain")
    budget = MAX_PARTS - 1
    stack: list[tuple[Part, int]] = [(root, 0)]
    while stack:
        part, depth = stack.pop()
        main, sub = part.content_type
        if main != "multipart" and (main, sub) != ("message", "rfc822"):
            continue
        if depth >= MAX_DEPTH or budget <= 0:
            part.opaque = True
            continue
        if main == "multipart":
            boundary = part.param("boundary")
            spans = split_multipart(raw, part.body_start, part.end, boundary.encode("utf-8", "surrogateescape"),
                                    limit=budget) if boundary else []
            child_default = "message/rfc822" if sub == "digest" else "text/plain"
            part.children = [_part(raw, s, e, child_default) for s, e in spans]
            part.opaque = not part.children
            budget -= len(part.children)
            stack.extend((child, depth + 1) for child in reversed(part.children))
        else:
            part.message = _part(raw, part.body_start, part.end, "text/plain")
            budget -= 1
            stack.append((part.message, depth + 1))
    return root


def split_multipart(raw: bytes, start: int, end: int, boundary: bytes, *,
                    limit: int = MAX_PARTS) -> list[tuple[int, int]]:
    """The first ``limit`` body parts of the multipart body ``raw[start:end]``, as (start, end) offsets
    between ``--boundary`` lines; the CRLF before a delimiter belongs to it."""
    delimiter = re.compile(rb"(?:\A|\r?\n)--" + re.escape(boundary) + rb"(--)?[ \t]*(?=\r?\n|\Z)")
    body = memoryview(raw)[start:end]   # a view, not a copy; \A and \Z anchor at the body's ends
    parts: list[tuple[int, int]] = []
    position: int | None = None
    for match in delimiter.finditer(body):
        if position is not None:
            parts.append((start + position, start + match.start()))
            if len(parts) >= limit:
                return parts
        if match.group(1):   # close delimiter
            return parts
        position = match.end()
        if body[position:position + 2] == b"\r\n":
            position += 2
        elif body[position:position + 1] == b"\n":
            position += 1
    if position is not None:   # no close delimiter: the last part runs to the end
        parts.append((start + position, end))
    return parts


class NoSuchPart(LookupError):
    pass


def find(root: Part, numbers: list[int]) -> Part:
    """The part at ``numbers`` (``[1, 2]`` for ``1.2``)."""
    part = root
    for depth, n in enumerate(numbers):
        container = part if depth == 0 or part.message is None else part.message
        if container is part and depth > 0 and not part.is_multipart:
            # A leaf body part has no parts: only a message (the root or an attached one) has a part 1.
            raise NoSuchPart(".".join(map(str, numbers)))
        if container.is_multipart:
            if not 1 <= n <= len(container.children):
                raise NoSuchPart(".".join(map(str, numbers)))
            part = container.children[n - 1]
        elif n == 1:
            part = container
        else:
            raise NoSuchPart(".".join(map(str, numbers)))
    return part


def header_fields(header: bytes) -> list[tuple[str, bytes]]:
    """Each field of a header block as (lower-case name, raw bytes including continuation lines)."""
    out: list[tuple[str, bytes]] = []
    for line in header.splitlines(keepends=True):
        if line in (b"\r\n", b"\n"):
            break
        if line[:1] in (b" ", b"\t") and out:
            name, raw = out[-1]
            out[-1] = (name, raw + line)
            continue
        name = line.split(b":", 1)[0].strip().decode("ascii", "replace").lower()
        out.append((name, line))
    return out


def filter_header(header: bytes, names: list[str], *, exclude: bool) -> bytes:
    """HEADER.FIELDS / HEADER.FIELDS.NOT: the matching fields, then the blank line."""
    wanted = {n.lower() for n in names}
    kept = [raw for name, raw in header_fields(header) if (name in wanted) != exclude]
    return b"".join(kept) + b"\r\n"
