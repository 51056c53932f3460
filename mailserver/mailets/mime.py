"""Header-level edits of a mail's content without touching its body.

James's header mailets (SetMimeHeader, RemoveMimeHeader, AddDeliveredToHeader at delivery)
change headers only. A stored mail is a header blob plus a body blob, so an edit rewrites the
header blob and keeps the body blob id: the body (possibly large) is never read or copied.
Header fields are handled as raw bytes (folded continuation lines kept), so untouched fields
are byte-for-byte what the sender sent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from email.header import decode_header, make_header

from mailserver.blob.api import StoragePolicy
from mailserver.mailets import blob_handover
from mailserver.model.mail import MailContent
from mailserver.queue.content import MimeMessageStore

_FIELD_NAME = re.compile(rb"^[!-9;-~]+:")  # a field name: printable ASCII except ':' and space
# A header line: a field name, then (RFC 5322 obs-header) optional blanks before the colon.
_FIELD_START = re.compile(rb"^[!-9;-~]+[ \t]*:")


def split_fields(header: bytes) -> tuple[list[bytes], bytes]:
    """The header block as raw fields (each with its continuation lines) and what follows them.

    The header ends at the first line that is neither a field nor a continuation line (RFC
    5322 2.2, as Postfix's cleanup and mime4j read it): usually the empty line, but a message
    whose body starts without that empty line has its body here too, and a header-only
    message has nothing after its fields. What follows is returned untouched.
    """
    fields: list[bytes] = []
    offset = 0
    for line in header.splitlines(keepends=True):
        if fields and line[:1] in (b" ", b"\t"):
            fields[-1] += line
        elif _FIELD_START.match(line):
            fields.append(line)
        else:
            break
        offset += len(line)
    return fields, header[offset:]


def field_name(raw_field: bytes) -> str:
    return raw_field.split(b":", 1)[0].decode("ascii", "replace").strip()


def field_value(raw_field: bytes) -> str:
    """Unfolded, RFC 2047-decoded value."""
    raw = raw_field.split(b":", 1)[1] if b":" in raw_field else b""
    text = re.sub(r"\r?\n[ \t]", " ", raw.decode("utf-8", "replace")).strip()
    try:
        return str(make_header(decode_header(text)))
    except Exception:  # a broken encoded-word: keep the raw text
        return text


def header_values(header: bytes, name: str) -> list[str]:
    lowered = name.lower()
    return [field_value(f) for f in split_fields(header)[0] if field_name(f).lower() == lowered]


def _eol(fields: list[bytes]) -> bytes:
    """The line ending the sender used (SMTP's CRLF when the header says nothing)."""
    first = fields[0] if fields else b""
    return b"\n" if first.endswith(b"\n") and not first.endswith(b"\r\n") else b"\r\n"


def encode_field(name: str, value: str, eol: bytes = b"\r\n") -> bytes:
    if not _FIELD_NAME.match(name.encode("ascii", "replace") + b":"):
        raise ValueError(f"invalid header name {name!r}")
    if any(c in value for c in "\r\n"):
        raise ValueError(f"header value of {name} must not contain line breaks")
    encoded = value if value.isascii() else make_header([(value.encode("utf-8"), "utf-8")]).encode()
    return f"{name}: {encoded}".encode("ascii") + eol


def edit_header(header: bytes, *, remove: tuple[str, ...] = (), add: tuple[tuple[str, str], ...] = (),
                prepend: tuple[tuple[str, str], ...] = ()) -> bytes:
    """Remove every field named in ``remove``, append ``add`` and prepend ``prepend`` fields.

    Added fields go at the end of the header, never after body text: when the body starts
    without the empty line, that line is inserted so the result reads the same everywhere.
    """
    fields, rest = split_fields(header)
    eol = _eol(fields)
    if fields and not fields[-1].endswith((b"\n", b"\r")):
        fields[-1] += eol  # a header-only message without a final line break
    if rest and not rest.startswith((b"\r\n", b"\n")):
        rest = eol + rest
    lowered = {n.lower() for n in remove}
    kept = [f for f in fields if field_name(f).lower() not in lowered]
    head = [encode_field(n, v, eol) for n, v in prepend]
    tail = [encode_field(n, v, eol) for n, v in add]
    return b"".join(head + kept + tail) + rest


def separated(header: bytes, *, body_follows: bool) -> bytes:
    """``header`` ended by the empty line when a body follows it and it has none.

    The store splits a message whose body starts without the empty line at the first non-field
    line once the header would exceed a MiB (``mailbox/content.split``): its header is then only
    fields, and the line edited fields need before that body has to be added here.
    """
    if not body_follows:
        return header
    fields, rest = split_fields(header)
    return header + _eol(fields) if fields and not rest else header


def rewrite_header(contents: MimeMessageStore, content: MailContent,
                   edit: Callable[[bytes], bytes]) -> MailContent:
    """New content whose header is ``edit(old header)``; a stored body keeps its blob."""
    old = contents.read_header(content)
    new = edit(old)
    if new == old:
        return content
    data = b"" if content.stored else content.data or b""
    new = separated(new, body_follows=(content.size if content.stored else len(data)) > len(old))
    if not content.stored:
        return MailContent.of_bytes(new + data[len(old):])
    blobs = contents.blobs
    header_id = blobs.save(blobs.default_bucket, new, StoragePolicy.SIZE_BASED)
    blob_handover.created(str(header_id))   # the spool entry deletes it once the mail is done
    return MailContent.of_blobs(str(header_id), content.body_blob_id or "", content.size - len(old) + len(new))
