"""SEARCH criteria (RFC 3501 §6.4.4, RFC 7162 MODSEQ), parsed into a predicate tree and evaluated
by scanning: flags, sizes, dates and uids from the metadata; header criteria from the header blob;
BODY and TEXT from the decoded text of the message. Content is loaded only for messages that
reach a criterion needing it (``AND`` stops at the first false operand), so ``UNSEEN`` or
``UID 5:*`` never touch the blob store. A later issue answers searches from the search index.

String matching is a case-insensitive substring match on decoded text (RFC 2047 words decoded,
transfer encodings undone), as RFC 3501 allows. The text comes from the bounded MIME walk of
``mailbox/content.py`` (depth and part count capped, no recursion), so a hostile message is searched
on what can be parsed and never fails the search of the mailbox.

``OR``, ``NOT`` and parentheses nest at most ``MAX_DEPTH`` levels: parsing and evaluating recurse
once per level, and a deeper query is refused with ``BAD [LIMIT]`` before any message is read.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from email.header import decode_header, make_header
from email.message import Message
from email.utils import parsedate_to_datetime

from mailserver.imap.fetch import Content
from mailserver.imap.parser import Atom, ParseError, Token
from mailserver.imap.response import parse_date
from mailserver.imap.sequence import SequenceSet
from mailserver.mailbox.content import _text, walk_parts
from mailserver.model.flags import SystemFlag
from mailserver.model.message import MessageMetadata

log = logging.getLogger(__name__)

CHARSETS = {"UTF-8", "US-ASCII"}
MAX_DEPTH = 100   # levels of OR, NOT and parentheses in one query
_FLAG_KEYS = {"ANSWERED": SystemFlag.ANSWERED, "DELETED": SystemFlag.DELETED, "DRAFT": SystemFlag.DRAFT,
              "FLAGGED": SystemFlag.FLAGGED, "SEEN": SystemFlag.SEEN, "RECENT": SystemFlag.RECENT}


class BadCharset(ValueError):
    pass


@dataclass
class Candidate:
    meta: MessageMetadata
    seq: int
    content: Content
    recent: bool
    largest_seq: int
    largest_uid: int
    _text: str | None = None
    _body: str | None = None

    def header_text(self, name: str) -> list[str]:
        return [_decode(value) for value in self.content.fields.get_all(name, [])]

    def body_text(self) -> str:
        if self._body is None:
            self._body = _message_text(self.content.full, self.meta.body_start_octet)
        return self._body

    def all_text(self) -> str:
        if self._text is None:
            headers = " ".join(_decode(str(v)) for _, v in self.content.fields.items())
            self._text = headers + "\n" + self.body_text()
        return self._text


Predicate = Callable[[Candidate], bool]


def _decode(value: str) -> str:
    try:
        return str(make_header(decode_header(value)))
    except (ValueError, LookupError, UnicodeDecodeError):
        return value


def _message_text(full: bytes, body_start: int) -> str:
    """The decoded text parts and the preambles and epilogues of multiparts (James's BODY finds
    words there too); the raw body when there is no text part (or the walk fails on hostile input)."""
    try:
        texts = []
        for part, is_leaf in walk_parts(full):
            if not is_leaf:
                texts.append(_outside_text(part))
            elif part.get_content_maintype() == "text":
                texts.append(_text(part))
    except Exception as exc:   # whatever the message, the other messages of the mailbox are still searched
        log.warning("message body searched as raw text (%s: %s)", type(exc).__name__, exc)
        texts = []
    if not texts:
        return full[body_start:].decode("utf-8", "replace")
    return "\n".join(texts)


def _outside_text(multipart: Message) -> str:
    payload = multipart.get_payload()
    return payload.encode("ascii", "surrogateescape").decode("utf-8", "replace") if isinstance(payload, str) else ""


@dataclass
class Query:
    predicate: Predicate
    modseq: bool = False    # a MODSEQ criterion was used: answer with (MODSEQ n)


def parse_query(tokens: list[Token]) -> Query:
    parser = _Parser(tokens)
    if parser.peek_keyword() == "CHARSET":
        parser.pos += 1
        charset = parser.string("charset").upper()
        if charset not in CHARSETS:
            raise BadCharset(charset)
    if not parser.more():
        raise ParseError("SEARCH needs criteria")
    predicates = []
    while parser.more():
        predicates.append(parser.key(0))
    return Query(_all(predicates), parser.modseq)


def _all(predicates: list[Predicate]) -> Predicate:
    if len(predicates) == 1:
        return predicates[0]
    return lambda c: all(p(c) for p in predicates)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.modseq = False

    def more(self) -> bool:
        return self.pos < len(self.tokens)

    def peek_keyword(self) -> str | None:
        token = self.tokens[self.pos] if self.more() else None
        return token.upper() if isinstance(token, Atom) else None

    def next(self, what: str) -> Token:
        if not self.more():
            raise ParseError(f"SEARCH: missing {what}")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def string(self, what: str) -> str:
        token = self.next(what)
        if isinstance(token, list):
            raise ParseError(f"SEARCH: {what} must be a string")
        if hasattr(token, "text"):
            return token.text()
        return str(token)

    def number(self, what: str) -> int:
        text = self.string(what)
        if not text.isdigit():
            raise ParseError(f"SEARCH: {what} must be a number")
        return int(text)

    def date(self, what: str) -> date:
        try:
            return parse_date(self.string(what)).date()
        except ValueError as exc:
            raise ParseError(f"SEARCH: {exc}") from None

    def key(self, depth: int) -> Predicate:
        """One search key; ``depth`` counts the OR, NOT and parentheses it is nested in."""
        token = self.next("search key")
        if isinstance(token, list) or (isinstance(token, Atom) and token.upper() in ("OR", "NOT")):
            if depth >= MAX_DEPTH:
                raise ParseError(f"[LIMIT] SEARCH criteria nested deeper than {MAX_DEPTH} levels of OR, NOT "
                                 "and parentheses")
        if isinstance(token, list):
            group = _Parser(token)
            predicates = []
            while group.more():
                predicates.append(group.key(depth + 1))
            if not predicates:
                raise ParseError("SEARCH: empty parenthesized criteria")
            self.modseq |= group.modseq
            return _all(predicates)
        if not isinstance(token, Atom):
            raise ParseError(f"SEARCH: unexpected string {token!r}")
        key = token.upper()
        if key == "ALL":
            return lambda c: True
        if key in _FLAG_KEYS:
            flag = _FLAG_KEYS[key]
            if flag is SystemFlag.RECENT:
                return lambda c: c.recent
            return lambda c: c.meta.flags.has(flag)
        if key.startswith("UN") and key[2:] in _FLAG_KEYS and key != "UNRECENT":
            flag = _FLAG_KEYS[key[2:]]
            return lambda c: not c.meta.flags.has(flag)
        if key == "NEW":
            return lambda c: c.recent and not c.meta.flags.has(SystemFlag.SEEN)
        if key == "OLD":
            return lambda c: not c.recent
        if key in ("KEYWORD", "UNKEYWORD"):
            keyword = self.string("keyword")
            if key == "KEYWORD":
                return lambda c: keyword in c.meta.flags.user or _system_keyword(keyword, c)
            return lambda c: keyword not in c.meta.flags.user and not _system_keyword(keyword, c)
        if key == "NOT":
            inner = self.key(depth + 1)
            return lambda c: not inner(c)
        if key == "OR":
            left, right = self.key(depth + 1), self.key(depth + 1)
            return lambda c: left(c) or right(c)
        if key == "LARGER":
            size = self.number("size")
            return lambda c: c.meta.size > size
        if key == "SMALLER":
            size = self.number("size")
            return lambda c: c.meta.size < size
        if key in ("BEFORE", "ON", "SINCE"):
            day = self.date("date")
            return _date_test(key, day, lambda c: _day(c.meta.internal_date))
        if key in ("SENTBEFORE", "SENTON", "SENTSINCE"):
            day = self.date("date")
            return _date_test(key[4:], day, _sent_day)
        if key in ("FROM", "TO", "CC", "BCC", "SUBJECT"):
            needle = self.string(key.lower()).lower()
            return lambda c: any(needle in v.lower() for v in c.header_text(key))
        if key == "HEADER":
            name, needle = self.string("header name"), self.string("header value").lower()
            if not needle:
                return lambda c: bool(c.content.fields.get_all(name))
            return lambda c: any(needle in v.lower() for v in c.header_text(name))
        if key == "BODY":
            needle = self.string("body text").lower()
            return lambda c: needle in c.body_text().lower()
        if key == "TEXT":
            needle = self.string("text").lower()
            return lambda c: needle in c.all_text().lower()
        if key == "UID":
            uids = SequenceSet.parse(self.string("uid set"))
            return lambda c: uids.contains(c.meta.uid, c.largest_uid)
        if key == "MODSEQ":
            if isinstance(self.tokens[self.pos] if self.more() else None, str) and \
                    not str(self.tokens[self.pos]).isdigit():   # entry-name and entry-type-req
                self.pos += 2
            value = self.number("mod-sequence value")
            self.modseq = True
            return lambda c: c.meta.mod_seq >= value
        if SequenceSet.is_sequence_set(key):
            seqs = SequenceSet.parse(key)
            return lambda c: seqs.contains(c.seq, c.largest_seq)
        raise ParseError(f"SEARCH: unknown key {token!s}")


def _system_keyword(keyword: str, c: Candidate) -> bool:
    if keyword.startswith("\\"):
        name = keyword[1:].upper()
        return name in _FLAG_KEYS and c.meta.flags.has(_FLAG_KEYS[name])
    return False


def _day(value: datetime) -> date:
    return (value if value.tzinfo is None else value.astimezone(UTC)).date()


def _sent_day(c: Candidate) -> date | None:
    raw = c.content.fields.get("date")
    if raw is None:
        return None
    try:
        sent = parsedate_to_datetime(str(raw))
    except (TypeError, ValueError, IndexError):
        return None
    return sent.date()   # the date in the sender's zone, as RFC 3501 says (disregarding time and timezone)


def _date_test(kind: str, day: date, of: Callable[[Candidate], date | None]) -> Predicate:
    def test(c: Candidate) -> bool:
        value = of(c)
        if value is None:
            return False
        if kind == "BEFORE":
            return value < day
        if kind == "ON":
            return value == day
        return value >= day
    return test
