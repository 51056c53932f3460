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
    """Modified UTF-7 -> Unicode; an 8-bit name is taken as UTF-8 (RFC 9051 / UTF8=ACCEPT clients).

    Only the canonical encoding of RFC 3501 5.1.3 is accepted: a shift holds no printable ASCII,
    has no stray bits, and never directly follows another. Two spellings of one name would
    otherwise name one mailbox on the wire and two in the store.
    """
    if any(ord(c) > 0x7E for c in name):
        return name

    def invalid(why: str) -> InvalidName:
        return InvalidName(f"invalid modified UTF-7 in mailbox name {name!r}: {why}")

    out: list[str] = []
    position = 0
    previous_shift_end = -1
    for match in _SHIFTED.finditer(name):
        out.append(name[position:match.start()])
        position = match.end()
        body = match.group(1)
        if not body:
            out.append("&")
            continue
        padded = body.replace(",", "/") + "=" * (-len(body) % 4)
        try:
            text = base64.b64decode(padded, validate=True).decode("utf-16-be")
        except (ValueError, UnicodeDecodeError) as exc:
            raise invalid("not base64 of UTF-16") from exc
        if encode_mutf7(text) != match.group(0):
            raise invalid(f"{match.group(0)} is not the RFC 3501 encoding of {text!r}")
        if match.start() == previous_shift_end:
            raise invalid("two shifts in a row must be one")
        previous_shift_end = match.end()
        out.append(text)
    out.append(name[position:])
    if "&" in _SHIFTED.sub("", name):
        raise invalid("'&' must start a shift or be '&-'")
    return "".join(out)


def normalize(name: str) -> str:
    """Wire name -> stored name: decoded, trailing delimiter dropped, ``inbox`` spelled ``INBOX``."""
    decoded = decode_mutf7(name)
    if decoded.endswith(DELIMITER) and len(decoded) > 1:
        decoded = decoded[:-1]
    first, sep, rest = decoded.partition(DELIMITER)
    if first.upper() == INBOX:
        decoded = INBOX + sep + rest
    return decoded


MAX_PATTERN_LENGTH = 1024   # reference + pattern, in characters: far above any real mailbox path


class ListPattern:
    """LIST/LSUB ``reference`` + ``pattern`` (both decoded), matched against stored names in linear time.

    ``*`` matches anything, ``%`` anything but the delimiter. The pattern runs as a set of positions
    (an NFA held in the bits of an int), one step per character of the name: O(len(name) x
    len(pattern)) whatever the pattern, where a backtracking regex built from the same pattern
    takes exponential time on ``*a*a*...*ab`` against a long name of ``a``.
    """

    def __init__(self, reference: str, pattern: str) -> None:
        full = reference + pattern
        if len(full) > MAX_PATTERN_LENGTH:
            raise InvalidName(f"LIST pattern longer than {MAX_PATTERN_LENGTH} characters")
        if full.upper().startswith(INBOX):
            rest = full[len(INBOX):]
            if not rest or rest[0] in (DELIMITER, "*", "%"):
                full = INBOX + rest
        steps: list[str] = []   # one pattern character each
        for char in full:
            # Runs of wildcards collapse ("**" is "*", "%*" and "*%" are "*"), so that the position
            # after a wildcard is always a literal or the end: one shift closes the set below.
            if char in "*%" and steps and steps[-1] in "*%":
                steps[-1] = "*" if "*" in (char, steps[-1]) else "%"
            else:
                steps.append(char)
        self._accept = 1 << len(steps)
        self._star = sum(1 << i for i, step in enumerate(steps) if step == "*")
        self._percent = sum(1 << i for i, step in enumerate(steps) if step == "%")
        self._literal: dict[str, int] = {}
        for i, step in enumerate(steps):
            if step not in "*%":
                self._literal[step] = self._literal.get(step, 0) | (1 << i)
        self._wild = self._star | self._percent

    def _closed(self, states: int) -> int:
        return states | ((states & self._wild) << 1)

    def matches(self, name: str) -> bool:
        states = self._closed(1)
        for char in name:
            moved = (states & self._literal.get(char, 0)) << 1
            stay = states & (self._star if char == DELIMITER else self._wild)
            states = self._closed(moved | stay)
            if not states:
                return False
        return bool(states & self._accept)
