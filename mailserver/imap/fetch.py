"""FETCH items (RFC 3501 §6.4.5, RFC 7162 MODSEQ): parsing the attribute list and rendering one message.

What each item costs decides what is loaded, once per message:

* metadata only: FLAGS, UID, INTERNALDATE, RFC822.SIZE, MODSEQ;
* the header blob only: ENVELOPE, BODY[HEADER], BODY[HEADER.FIELDS ...], RFC822.HEADER;
* streamed from the blob store without holding the message: BODY[], BODY[TEXT], RFC822,
  RFC822.TEXT and their partials (unless another item needs the whole message anyway);
* the whole message, parsed into a MIME tree: BODYSTRUCTURE, BODY, numbered part sections.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from email.message import Message

from mailserver.imap import mime
from mailserver.imap.bodystructure import body_structure
from mailserver.imap.envelope import envelope
from mailserver.imap.parser import Atom, ParseError, Token
from mailserver.imap.response import date_time, flag_list, literal, number
from mailserver.model.message import MessageMetadata

SIMPLE = {"FLAGS", "UID", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODYSTRUCTURE", "BODY", "MODSEQ",
          "RFC822", "RFC822.HEADER", "RFC822.TEXT"}
MACROS = {"ALL": ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE"],
          "FAST": ["FLAGS", "INTERNALDATE", "RFC822.SIZE"],
          "FULL": ["FLAGS", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODY"]}
_SECTION_ITEM = re.compile(r"^(BODY|BODY\.PEEK|BINARY|BINARY\.PEEK)\[(.*)\](?:<(\d{1,10})(?:\.(\d{1,10}))?>)?$",
                           re.IGNORECASE | re.DOTALL)
_SECTION = re.compile(r"^((?:[1-9]\d{0,4})(?:\.[1-9]\d{0,4})*)?\.?"
                      r"(HEADER\.FIELDS\.NOT|HEADER\.FIELDS|HEADER|TEXT|MIME)?(?:\s*\((.*)\))?$",
                      re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class Section:
    numbers: tuple[int, ...] = ()
    text: str | None = None          # HEADER, HEADER.FIELDS, HEADER.FIELDS.NOT, TEXT, MIME
    fields: tuple[str, ...] = ()

    def spec(self) -> str:
        parts = [".".join(map(str, self.numbers))] if self.numbers else []
        if self.text:
            parts.append(self.text)
        spec = ".".join(parts)
        if self.fields:
            spec += " (" + " ".join(self.fields) + ")"   # echoed as asked, as James does
        return spec

    @property
    def on_root(self) -> bool:
        return not self.numbers


@dataclass(frozen=True)
class Attribute:
    name: str                                  # FLAGS ... or BODY for sections
    section: Section | None = None
    peek: bool = False
    partial: tuple[int, int | None] | None = None

    @property
    def sets_seen(self) -> bool:
        return (self.section is not None and not self.peek) or self.name in ("RFC822", "RFC822.TEXT")

    @property
    def need(self) -> str:
        """meta, header, stream or full."""
        if self.name in ("FLAGS", "UID", "INTERNALDATE", "RFC822.SIZE", "MODSEQ"):
            return "meta"
        if self.name in ("ENVELOPE", "RFC822.HEADER"):
            return "header"
        if self.name in ("RFC822", "RFC822.TEXT"):
            return "stream"
        if self.section is not None and self.section.on_root:
            if self.section.text in ("HEADER", "HEADER.FIELDS", "HEADER.FIELDS.NOT"):
                return "header"
            if self.section.text in (None, "TEXT"):
                return "stream"
        return "full"


@dataclass
class FetchRequest:
    attributes: list[Attribute]
    changed_since: int | None = None
    vanished: bool = False   # UID FETCH's VANISHED modifier (RFC 7162 3.2.6)

    @property
    def sets_seen(self) -> bool:
        return any(a.sets_seen for a in self.attributes)

    def with_uid(self) -> FetchRequest:
        if any(a.name == "UID" for a in self.attributes):
            return self
        return replace(self, attributes=[*self.attributes, Attribute("UID")])   # after, as James

    def with_modseq(self) -> FetchRequest:
        if any(a.name == "MODSEQ" for a in self.attributes):
            return self
        return replace(self, attributes=[*self.attributes, Attribute("MODSEQ")])


def parse_request(tokens: list[Token]) -> FetchRequest:
    """``tokens``: the arguments after the sequence set (items, then optional modifiers)."""
    if not tokens:
        raise ParseError("FETCH needs data items")
    items, modifiers = tokens[0], tokens[1:]
    listed: list[Token] = items if isinstance(items, list) else [items]
    # A macro inside the list, "(ALL)", is outside RFC 3501's grammar; James expands it, so do we.
    names = [n for name in listed for n in _expanded(name)]
    # An empty list "()" is accepted and answered "* n FETCH ()", as James does; RFC 3501's grammar
    # wants one item at least, but refusing it gains a client nothing.
    attributes = [parse_attribute(n) for n in names]
    request = FetchRequest(attributes)
    if modifiers:
        if len(modifiers) != 1 or not isinstance(modifiers[0], list):
            raise ParseError("FETCH modifiers must be one parenthesized list")
        mods = modifiers[0]
        i = 0
        while i < len(mods):
            key = str(mods[i]).upper()
            if key == "CHANGEDSINCE" and i + 1 < len(mods) and str(mods[i + 1]).isdigit():
                request.changed_since = int(mods[i + 1])
                i += 2
            elif key == "VANISHED":
                request.vanished = True
                i += 1
            else:
                raise ParseError(f"unknown FETCH modifier {mods[i]!r}")
        if request.changed_since is not None:
            request = request.with_modseq()
    return request


def _expanded(token: Token) -> list[Token]:
    if isinstance(token, Atom) and token.upper() in MACROS:
        return [Atom(n) for n in MACROS[token.upper()]]
    return [token]


def parse_attribute(token: Token) -> Attribute:
    if not isinstance(token, Atom):
        raise ParseError(f"invalid FETCH item {token!r}")
    upper = token.upper()
    if upper in SIMPLE:
        return Attribute(upper)
    match = _SECTION_ITEM.match(token)
    if not match:
        raise ParseError(f"unknown FETCH item {token!s}")
    kind, spec, start, length = match.groups()
    if kind.upper().startswith("BINARY"):
        raise ParseError("BINARY is not supported")
    if length is not None and int(length) == 0:
        raise ParseError("partial length must be > 0")
    partial = (int(start), int(length) if length is not None else None) if start is not None else None
    return Attribute("BODY", parse_section(spec), peek=kind.upper().endswith("PEEK"), partial=partial)


def parse_section(spec: str) -> Section:
    match = _SECTION.match(spec.strip())
    if not match:
        raise ParseError(f"invalid section [{spec}]")
    numbers_text, text, fields_text = match.groups()
    numbers = tuple(int(n) for n in numbers_text.split(".")) if numbers_text else ()
    text = text.upper() if text else None
    if text == "MIME" and not numbers:
        raise ParseError("MIME needs a part number")
    if text in ("HEADER.FIELDS", "HEADER.FIELDS.NOT"):
        names = [f.strip('"') for f in (fields_text or "").split()]
        if not names:
            raise ParseError(f"{text} needs a list of field names")
        return Section(numbers, text, tuple(names))
    if fields_text is not None:
        raise ParseError(f"invalid section [{spec}]")
    return Section(numbers, text)


@dataclass
class StreamSlice:
    """Octets [start, start + length) of the whole message, streamed by the session."""

    message: MessageMetadata
    start: int
    length: int


class Content:
    """What one message's items need, loaded once (blocking: run off the event loop)."""

    def __init__(self, meta: MessageMetadata, read_header: Callable[[MessageMetadata], bytes],
                 read_full: Callable[[MessageMetadata], bytes],
                 envelope_of: Callable[[MessageMetadata, Callable[[], bytes]], bytes] | None = None) -> None:
        """``envelope_of(meta, render)``: where rendered envelopes are kept (the header cache)."""
        self.meta = meta
        self._read_header, self._read_full = read_header, read_full
        self._envelope_of = envelope_of
        self._header: bytes | None = None
        self._fields: Message | None = None
        self._full: bytes | None = None
        self._tree: mime.Part | None = None

    @property
    def header(self) -> bytes:
        if self._header is None:
            self._header = self._full[:self.meta.body_start_octet] if self._full is not None \
                else self._read_header(self.meta)
        return self._header

    @property
    def fields(self) -> Message:
        if self._fields is None:
            self._fields = mime.parse(self.header).fields
        return self._fields

    @property
    def envelope(self) -> bytes:
        if self._envelope_of is None:
            return envelope(self.fields)
        return self._envelope_of(self.meta, lambda: envelope(self.fields))

    @property
    def full(self) -> bytes:
        if self._full is None:
            self._full = self._read_full(self.meta)
        return self._full

    @property
    def tree(self) -> mime.Part:
        if self._tree is None:
            self._tree = mime.parse(self.full)
        return self._tree


def section_bytes(content: Content, section: Section) -> bytes:
    if section.on_root:
        if section.text in (None, "TEXT"):
            return content.full if section.text is None else content.full[content.meta.body_start_octet:]
        header = content.header
    else:
        try:
            part = mime.find(content.tree, list(section.numbers))
        except mime.NoSuchPart:
            return b""
        if section.text is None:
            return part.body
        if section.text == "MIME":
            return part.header
        message = part.message if part.message is not None else None
        if message is None:
            return b""
        if section.text == "TEXT":
            return message.body
        header = message.header
    if section.text == "HEADER":
        return header
    return mime.filter_header(header, list(section.fields), exclude=section.text == "HEADER.FIELDS.NOT")


def _partial(data: bytes, partial: tuple[int, int | None] | None) -> bytes:
    if partial is None:
        return data
    start, length = partial
    return data[start:] if length is None else data[start:start + length]


def render(meta: MessageMetadata, seq: int, request: FetchRequest, content: Content, *,
           recent: bool) -> list[bytes | StreamSlice]:
    """``* seq FETCH (...)`` for one message, as bytes and slices to stream (blocking)."""
    stream_ok = not any(a.need == "full" for a in request.attributes)
    pieces: list[bytes | StreamSlice] = [b"* %d FETCH (" % seq]
    first = True
    for attr in request.attributes:
        item = _render_one(attr, meta, content, recent=recent, stream_ok=stream_ok)
        if not first:
            pieces.append(b" ")
        first = False
        pieces.extend(item)
    pieces.append(b")\r\n")
    return _merge(pieces)


def _render_one(attr: Attribute, meta: MessageMetadata, content: Content, *, recent: bool,
                stream_ok: bool) -> list[bytes | StreamSlice]:
    name = attr.name
    if name == "FLAGS":
        return [b"FLAGS " + flag_list(meta.flags, recent=recent)]
    if name == "UID":
        return [b"UID " + number(meta.uid)]
    if name == "MODSEQ":
        return [b"MODSEQ (" + number(meta.mod_seq) + b")"]
    if name == "INTERNALDATE":
        return [b"INTERNALDATE " + date_time(meta.internal_date)]
    if name == "RFC822.SIZE":
        return [b"RFC822.SIZE " + number(meta.size)]
    if name == "ENVELOPE":
        return [b"ENVELOPE " + content.envelope]
    if name == "BODYSTRUCTURE":
        return [b"BODYSTRUCTURE " + body_structure(content.tree)]
    if name == "BODY" and attr.section is None:
        return [b"BODY " + body_structure(content.tree, extensible=False)]
    if name == "RFC822.HEADER":
        return [b"RFC822.HEADER " + literal(content.header)]
    if name in ("RFC822", "RFC822.TEXT"):
        start = 0 if name == "RFC822" else meta.body_start_octet
        return [name.encode() + b" ", *_whole_or_stream(meta, content, start, None, stream_ok)]
    assert attr.section is not None
    label = b"BODY[" + attr.section.spec().encode() + b"]"
    if attr.partial is not None:
        label += b"<%d>" % attr.partial[0]
    if attr.need == "stream":
        base = 0 if attr.section.text is None else meta.body_start_octet
        start, length = attr.partial if attr.partial is not None else (0, None)
        return [label + b" ", *_whole_or_stream(meta, content, base + start, length, stream_ok)]
    data = _partial(section_bytes(content, attr.section), attr.partial)
    return [label + b" " + literal(data)]


def _whole_or_stream(meta: MessageMetadata, content: Content, start: int, length: int | None,
                     stream_ok: bool) -> list[bytes | StreamSlice]:
    start = min(start, meta.size)
    available = meta.size - start
    length = available if length is None else min(length, available)
    if not stream_ok or length == 0:
        data = content.full[start:start + length] if length else b""
        return [literal(data)]
    return [b"{%d}\r\n" % length, StreamSlice(meta, start, length)]


def _merge(pieces: list[bytes | StreamSlice]) -> list[bytes | StreamSlice]:
    out: list[bytes | StreamSlice] = []
    for piece in pieces:
        if isinstance(piece, bytes) and out and isinstance(out[-1], bytes):
            out[-1] += piece
        else:
            out.append(piece)
    return out

