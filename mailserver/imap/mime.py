"""A MIME tree over a message's raw bytes, for BODYSTRUCTURE and byte-exact BODY[section] fetches.

Python's ``email`` package re-serializes what it parses, so section contents would not be the
octets the client appended. Here every part keeps slices of the original bytes: its MIME header
(up to and including the blank line) and its body; ``email`` only parses header *fields*.

Part numbering follows RFC 3501 §6.4.5: the parts of a multipart are 1, 2, ...; a non-multipart
message has one part, 1, its body; a ``message/rfc822`` part's own parts continue below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32

MAX_DEPTH = 32
_BLANK = re.compile(rb"\r?\n\r?\n")
_PARSER = BytesHeaderParser(policy=compat32)


@dataclass
class Part:
    header: bytes                 # MIME header (or the message header) including the blank line
    body: bytes
    fields: Message               # parsed header fields (raw values)
    children: list[Part] = field(default_factory=list)
    message: Part | None = None   # the encapsulated message of a message/rfc822 part

    @property
    def content_type(self) -> tuple[str, str]:
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


def split_header(raw: bytes) -> tuple[bytes, bytes]:
    """Header (with the blank line) and body; all header when there is no blank line."""
    if raw.startswith(b"\r\n") or raw.startswith(b"\n"):   # no header at all
        end = 2 if raw.startswith(b"\r\n") else 1
        return raw[:end], raw[end:]
    match = _BLANK.search(raw)
    if match is None:
        return raw, b""
    return raw[:match.end()], raw[match.end():]


def parse(raw: bytes, *, default_type: str = "text/plain", depth: int = 0) -> Part:
    header, body = split_header(raw)
    fields = _PARSER.parsebytes(header)
    if default_type != "text/plain" and "content-type" not in fields:
        fields.set_default_type(default_type)
    part = Part(header, body, fields)
    if depth >= MAX_DEPTH:
        return part
    main, sub = part.content_type
    if main == "multipart":
        boundary = part.param("boundary")
        if boundary:
            child_default = "message/rfc822" if sub == "digest" else "text/plain"
            part.children = [parse(chunk, default_type=child_default, depth=depth + 1)
                             for chunk in split_multipart(body, boundary.encode("utf-8", "surrogateescape"))]
    elif (main, sub) == ("message", "rfc822"):
        part.message = parse(body, depth=depth + 1)
    return part


def split_multipart(body: bytes, boundary: bytes) -> list[bytes]:
    """The body parts between ``--boundary`` lines; the CRLF before a delimiter belongs to it."""
    delimiter = re.compile(rb"(?:\A|\r?\n)--" + re.escape(boundary) + rb"(--)?[ \t]*(?=\r?\n|\Z)")
    parts: list[bytes] = []
    start: int | None = None
    for match in delimiter.finditer(body):
        if start is not None:
            parts.append(body[start:match.start()])
        if match.group(1):   # close delimiter
            return parts
        end = match.end()
        if body[end:end + 2] == b"\r\n":
            end += 2
        elif body[end:end + 1] == b"\n":
            end += 1
        start = end
    if start is not None:   # no close delimiter: the last part runs to the end
        parts.append(body[start:])
    return parts


class NoSuchPart(LookupError):
    pass


def find(root: Part, numbers: list[int]) -> Part:
    """The part at ``numbers`` (``[1, 2]`` for ``1.2``)."""
    part = root
    for depth, n in enumerate(numbers):
        container = part if depth == 0 or part.message is None else part.message
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
