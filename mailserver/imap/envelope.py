"""ENVELOPE (RFC 3501 §7.4.2): date, subject, from, sender, reply-to, to, cc, bcc, in-reply-to,
message-id, with the header values as they are (encoded words are the client's to decode).

Sender and Reply-To default to From when absent. Groups (``undisclosed-recipients:;``) are
written as RFC 3501 describes them: a start marker (NIL NIL "group" NIL), the members, an end
marker (NIL NIL NIL NIL).
"""

from __future__ import annotations

import re
from email.message import Message
from email.utils import getaddresses

from mailserver.imap.response import nstring, paren

_FOLD = re.compile(r"\r?\n(?=[ \t])")
_GROUP = re.compile(r"^\s*([^:<>\"@,]+):(.*?);?\s*$", re.DOTALL)


def raw_value(fields: Message, name: str) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    return _FOLD.sub("", str(value)).strip()


def _address(name: str, address: str) -> bytes:
    mailbox, at, host = address.rpartition("@") if "@" in address else (address, "", "")
    return paren([nstring(name or None), b"NIL", nstring(mailbox or None), nstring(host if at else None)])


def address_list(value: str | None) -> bytes:
    if not value:
        return b"NIL"
    items: list[bytes] = []
    for chunk in _split_groups(value):
        group = _GROUP.match(chunk) if ":" in chunk and "@" not in chunk.split(":", 1)[0] else None
        if group is not None and not chunk.lstrip().startswith('"'):
            items.append(paren([b"NIL", b"NIL", nstring(group.group(1).strip()), b"NIL"]))
            items.extend(_address(n, a) for n, a in getaddresses([group.group(2)]) if a or n)
            items.append(b"(NIL NIL NIL NIL)")
        else:
            items.extend(_address(n, a) for n, a in getaddresses([chunk]) if a or n)
    return b"(" + b"".join(items) + b")" if items else b"NIL"   # addresses follow each other without space


def _split_groups(value: str) -> list[str]:
    """Split at group ends (``;``) outside quotes, so each chunk is a group or plain addresses."""
    chunks, current, quoted, angle = [], [], False, 0
    for char in value:
        current.append(char)
        if char == '"':
            quoted = not quoted
        elif not quoted and char == "<":
            angle += 1
        elif not quoted and char == ">":
            angle = max(0, angle - 1)
        elif not quoted and not angle and char == ";":
            chunks.append("".join(current))
            current = []
    if "".join(current).strip():
        chunks.append("".join(current))
    return [c.strip().lstrip(",").strip() for c in chunks if c.strip().lstrip(",").strip()]


def envelope(fields: Message) -> bytes:
    sender_default = raw_value(fields, "from")
    return paren([
        nstring(raw_value(fields, "date")),
        nstring(raw_value(fields, "subject")),
        address_list(raw_value(fields, "from")),
        address_list(raw_value(fields, "sender") or sender_default),
        address_list(raw_value(fields, "reply-to") or sender_default),
        address_list(raw_value(fields, "to")),
        address_list(raw_value(fields, "cc")),
        address_list(raw_value(fields, "bcc")),
        nstring(raw_value(fields, "in-reply-to")),
        nstring(raw_value(fields, "message-id")),
    ])
