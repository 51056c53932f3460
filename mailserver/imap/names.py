"""Mailbox names on the wire: modified UTF-7 (RFC 3501 §5.1.3), the hierarchy delimiter, LIST patterns.

Names are stored in Unicode (as James stores them); on the wire they are modified UTF-7.
The delimiter is James's ``.``; ``INBOX`` is case-insensitive. LIST patterns: ``*`` matches
anything, ``%`` anything but the delimiter.
"""

from __future__ import annotations

import base64
import re

from mailserver.model.mailbox import DELIMITER, INBOX


class InvalidName(ValueError):
    pass


def encode_mutf7(name: str) -> str:
    out: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            raw = "".join(pending).encode("utf-16-be")
            out.append("&" + base64.b64encode(raw).decode("ascii").rstrip("=").replace("/", ",") + "-")
            pending.clear()

    for char in name:
        if 0x20 <= ord(char) <= 0x7E:
            flush()
            out.append("&-" if char == "&" else char)
        else:
            pending.append(char)
    flush()
    return "".join(out)


_SHIFTED = re.compile(r"&([A-Za-z0-9+,]*)-")


def decode_mutf7(name: str) -> str:
    """Modified UTF-7 -> Unicode; a name that is not valid mUTF-7 (8-bit, bare '&') is taken as UTF-8."""
    if any(ord(c) > 0x7E for c in name):
        return name   # RFC 9051 / UTF8=ACCEPT clients send UTF-8 as is

    def shifted(match: re.Match[str]) -> str:
        body = match.group(1)
        if not body:
            return "&"
        padded = body.replace(",", "/") + "=" * (-len(body) % 4)
        try:
            return base64.b64decode(padded, validate=True).decode("utf-16-be")
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidName(f"invalid modified UTF-7 in mailbox name {name!r}") from exc

    if "&" in _SHIFTED.sub("", name):
        raise InvalidName(f"invalid modified UTF-7 in mailbox name {name!r}: '&' must start a shift or be '&-'")
    return _SHIFTED.sub(shifted, name)


def normalize(name: str) -> str:
    """Wire name -> stored name: decoded, trailing delimiter dropped, ``inbox`` spelled ``INBOX``."""
    decoded = decode_mutf7(name)
    if decoded.endswith(DELIMITER) and len(decoded) > 1:
        decoded = decoded[:-1]
    first, sep, rest = decoded.partition(DELIMITER)
    if first.upper() == INBOX:
        decoded = INBOX + sep + rest
    return decoded


def pattern_regex(reference: str, pattern: str) -> re.Pattern[str]:
    """LIST ``reference`` + ``pattern`` (both decoded) as a regex over stored names."""
    full = reference + pattern
    if full.upper().startswith(INBOX):
        rest = full[len(INBOX):]
        if not rest or rest[0] in (DELIMITER, "*", "%"):
            full = INBOX + rest
    parts = []
    for char in full:
        if char == "*":
            parts.append(".*")
        elif char == "%":
            parts.append(f"[^{re.escape(DELIMITER)}]*")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts) + r"\Z", re.DOTALL)
