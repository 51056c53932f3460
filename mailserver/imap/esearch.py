"""ESEARCH (RFC 4731): ``SEARCH RETURN (MIN MAX COUNT ALL)`` and its ``* ESEARCH`` reply.

``RETURN`` comes before the criteria; an empty list means ``ALL`` (RFC 4731 3.1). ``SAVE``
(RFC 5182 SEARCHRES) is not offered and refused with BAD. The reply follows James's
``ESearchResponseEncoder``: ``(TAG "t")``, ``UID`` for UID SEARCH, then MIN, MAX, COUNT, ALL in
that order, MIN/MAX/ALL left out when nothing matched, and ``MODSEQ`` when the query had one.
"""

from __future__ import annotations

from collections.abc import Sequence

from mailserver.imap.parser import Atom, ParseError, Token
from mailserver.imap.response import quoted
from mailserver.imap.sequence import format_set

RETURN_OPTIONS = ("MIN", "MAX", "COUNT", "ALL")   # the reply's order


def split_return_options(tokens: Sequence[Token]) -> tuple[frozenset[str] | None, list[Token]]:
    """``(options, criteria)``; options is None for a plain SEARCH (no RETURN)."""
    if not tokens or not isinstance(tokens[0], Atom) or tokens[0].upper() != "RETURN":
        return None, list(tokens)
    if len(tokens) < 2 or not isinstance(tokens[1], list):
        raise ParseError("SEARCH RETURN needs a parenthesized list of options")
    options = set()
    for option in tokens[1]:
        name = str(option).upper() if isinstance(option, Atom) else None
        if name not in RETURN_OPTIONS:
            raise ParseError(f"unknown SEARCH RETURN option {option!r} (MIN, MAX, COUNT or ALL)")
        options.add(name)
    return frozenset(options or {"ALL"}), list(tokens[2:])


def esearch_response(tag: str, *, by_uid: bool, options: frozenset[str], numbers: Sequence[int],
                     modseq: int | None) -> bytes:
    """One ``* ESEARCH`` line; ``numbers`` ascending (sequence numbers or uids)."""
    parts = [b"* ESEARCH (TAG " + quoted(tag) + b")"]
    if by_uid:
        parts.append(b"UID")
    if numbers and "MIN" in options:
        parts.append(b"MIN %d" % numbers[0])
    if numbers and "MAX" in options:
        parts.append(b"MAX %d" % numbers[-1])
    if "COUNT" in options:
        parts.append(b"COUNT %d" % len(numbers))
    if numbers and "ALL" in options:
        parts.append(b"ALL " + format_set(numbers).encode("ascii"))
    if modseq is not None:
        parts.append(b"MODSEQ %d" % modseq)
    return b" ".join(parts) + b"\r\n"
