"""SORT (RFC 5256 section 3): the sort criteria, the values they compare, and the ordering.

Criteria: ARRIVAL (INTERNALDATE), CC, FROM, TO (the local part of the field's first mailbox, RFC
5256 2.2's addr-mailbox), DATE (the sent date of 2.2), SIZE, SUBJECT (the base subject of 2.1),
each optionally after REVERSE. Strings compare with i;ascii-casemap. Messages equal on every
criterion keep their mailbox order: the list starts in sequence order and each criterion, last
first, is a stable sort (``reverse=True`` keeps equal items in their order too).

Bounds: at most ``MAX_CRITERIA`` criteria and ``MAX_SEARCH_TOKENS`` tokens of search keys, checked
before any message is read; the messages are the selected mailbox's, already bounded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.message import Message
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any

from mailserver.imap.base_subject import base_subject, casemap
from mailserver.imap.envelope import raw_value
from mailserver.imap.parser import Atom, ParseError, Token
from mailserver.imap.search import CHARSETS, BadCharset, Candidate, Query, parse_query

MAX_CRITERIA = 16
MAX_SEARCH_TOKENS = 1000
KEYS = ("ARRIVAL", "CC", "DATE", "FROM", "SIZE", "SUBJECT", "TO")

Criterion = tuple[str, bool]   # (key, reversed)


def parse_criteria(tokens: Sequence[Token]) -> list[Criterion]:
    """``(REVERSE DATE SUBJECT)`` -> ``[("DATE", True), ("SUBJECT", False)]``."""
    if not tokens:
        raise ParseError("SORT needs at least one sort criterion")
    if len(tokens) > 2 * MAX_CRITERIA:
        raise ParseError(f"[LIMIT] at most {MAX_CRITERIA} sort criteria")
    criteria: list[Criterion] = []
    reverse = False
    for token in tokens:
        name = token.upper() if isinstance(token, Atom) else None
        if name == "REVERSE" and not reverse:
            reverse = True
        elif name in KEYS:
            criteria.append((name, reverse))
            reverse = False
        else:
            raise ParseError(f"unknown sort criterion {token!s}")
    if reverse:
        raise ParseError("REVERSE must be followed by a sort criterion")
    if len(criteria) > MAX_CRITERIA:
        raise ParseError(f"[LIMIT] at most {MAX_CRITERIA} sort criteria")
    return criteria


def parse_search(tokens: Sequence[Token], command: str) -> Query:
    """SORT's and THREAD's ``charset search-keys`` (the charset is required, not after CHARSET)."""
    if not tokens:
        raise ParseError(f"{command} needs a charset and search criteria")
    charset = tokens[0]
    if not isinstance(charset, (Atom, str)):
        raise ParseError(f"{command}: the charset must be an atom or a string")
    if str(charset).upper() not in CHARSETS:
        raise BadCharset(str(charset))
    if _count(tokens[1:]) > MAX_SEARCH_TOKENS:
        raise ParseError(f"[LIMIT] {command} search criteria longer than {MAX_SEARCH_TOKENS} items")
    return parse_query(list(tokens[1:]))


def _count(tokens: Sequence[Token]) -> int:
    """The tokens, nested lists included (the parser has bounded their nesting)."""
    count, pending = 0, [tokens]
    while pending:
        for token in pending.pop():
            count += 1
            if isinstance(token, list):
                pending.append(token)
    return count


def sent_date(fields: Message, internal_date: datetime) -> float:
    """RFC 5256 2.2: the Date field in UTC (a zone it cannot read is UTC); INTERNALDATE when the
    field is missing or cannot be parsed."""
    raw = raw_value(fields, "date")
    if raw:
        try:
            return _timestamp(parsedate_to_datetime(raw))
        except (TypeError, ValueError, IndexError, OverflowError):
            pass
    return _timestamp(internal_date)


def _timestamp(value: datetime) -> float:
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def first_mailbox(fields: Message, name: str) -> str:
    """The local part of the first mailbox of a From, To or Cc field; empty when there is none."""
    value = raw_value(fields, name)
    if not value:
        return ""
    for _, address in getaddresses([value]):
        if address:
            return address.rpartition("@")[0] if "@" in address else address
    return ""


def _key(name: str) -> Callable[[Candidate], Any]:
    if name == "ARRIVAL":
        return lambda c: _timestamp(c.meta.internal_date)
    if name == "SIZE":
        return lambda c: c.meta.size
    if name == "DATE":
        return lambda c: sent_date(c.content.fields, c.meta.internal_date)
    if name == "SUBJECT":
        return lambda c: base_subject(raw_value(c.content.fields, "subject")).key
    field = name.lower()
    return lambda c: casemap(first_mailbox(c.content.fields, field))


@dataclass(frozen=True)
class SortRow:
    """What sorting keeps of a message: its values for the criteria, not its header."""
    seq: int
    uid: int
    mod_seq: int
    values: tuple[Any, ...]


def sort_row(candidate: Candidate, criteria: Sequence[Criterion]) -> SortRow:
    """Blocking (reads the header when a criterion needs it)."""
    meta = candidate.meta
    return SortRow(candidate.seq, meta.uid, meta.mod_seq, tuple(_key(name)(candidate) for name, _ in criteria))


def sort(rows: Sequence[SortRow], criteria: Sequence[Criterion]) -> list[SortRow]:
    """``rows`` in the order the criteria give, ties by sequence number."""
    ordered = sorted(rows, key=lambda r: r.seq)
    for index in reversed(range(len(criteria))):
        ordered.sort(key=lambda r: r.values[index], reverse=criteria[index][1])
    return ordered
