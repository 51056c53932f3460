"""Tokens of an IMAP command: atoms, quoted strings, literals, parenthesized lists (RFC 3501 §4, §9).

The reader (``reader.py``) hands over the command as *segments*: the text between literals, and
the literal payloads themselves. A segment that ends with ``{n}`` or ``{n+}`` is followed by
its literal. ``tokenize`` turns this into Python values:

* ``Atom`` (a ``str``) for atoms, including ``NIL``, flags (``\\Seen``), sequence sets and
  FETCH attributes with their section: ``BODY.PEEK[HEADER.FIELDS (From)]<0.100>`` is one atom
  (spaces and parentheses inside ``[...]`` belong to it);
* ``str`` for quoted strings (UTF-8);
* ``Literal`` for literals (bytes, or a spooled file for a large APPEND);
* ``list`` for parenthesized lists.

``Args`` reads a command's arguments in order, with an error naming what was expected.

Lists nest at most ``MAX_NESTING`` levels: no command needs more, and every later walk over the
tokens (the SEARCH parser, error messages, closing literals) may then recurse safely. A deeper
command is refused with ``BAD [LIMIT]`` and the session goes on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any


class ParseError(ValueError):
    """Malformed command: answered with a tagged (or untagged, without a tag) BAD."""


class Atom(str):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"Atom({str.__repr__(self)})"


@dataclass
class Literal:
    """A literal payload: bytes, or a spooled temporary file for large ones (APPEND)."""

    data: bytes | None = None
    file: IO[bytes] | None = None
    size: int = 0

    def content(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.file is not None
        self.file.seek(0)
        return self.file.read()

    def stream(self) -> IO[bytes]:
        import io

        if self.file is not None:
            self.file.seek(0)
            return self.file
        return io.BytesIO(self.data or b"")

    def text(self) -> str:
        return self.content().decode("utf-8", "surrogateescape")

    def close(self) -> None:
        if self.file is not None:
            self.file.close()


Token = Any   # Atom | str | Literal | list[Token]

_LITERAL_MARK = re.compile(rb"\{(\d{1,12})(\+?)\}$")
_ATOM_END = b" ()\"{"
_CTL = set(range(0x00, 0x20)) | {0x7F}
MAX_NESTING = 100   # levels of parenthesized lists in one command


@dataclass
class Command:
    tag: str
    name: str                       # upper case; "UID FETCH" for the UID variants
    args: list[Token] = field(default_factory=list)

    def close(self) -> None:
        for token in _walk(self.args):
            if isinstance(token, Literal):
                token.close()


def _walk(tokens: Sequence[Token]) -> Iterator[Token]:
    """Every non-list token, depth first, without recursion."""
    stack: list[Iterator[Token]] = [iter(tokens)]
    while stack:
        token = next(stack[-1], _END)
        if token is _END:
            stack.pop()
        elif isinstance(token, list):
            stack.append(iter(token))
        else:
            yield token


_END = object()


TAG = re.compile(r"^[\x21-\x7e]+$")


def parse_command(segments: Sequence[bytes | Literal]) -> Command:
    """``segments`` as produced by the reader; raises ParseError (with ``.tag`` when one was read)."""
    first = segments[0]
    assert isinstance(first, bytes)
    head, _, _ = first.partition(b" ")
    tag = head.decode("ascii", "replace")
    if not head or not TAG.match(tag) or any(c in tag for c in '(){%*"\\+'):
        raise ParseError("missing or malformed tag")
    try:
        tokens = tokenize(segments)
    except ParseError as exc:
        exc.tag = tag  # type: ignore[attr-defined]
        raise
    tokens = tokens[1:]
    if not tokens or not isinstance(tokens[0], Atom):
        error = ParseError("missing command name")
        error.tag = tag  # type: ignore[attr-defined]
        raise error
    name = tokens[0].upper()
    args = tokens[1:]
    if name == "UID":
        if not args or not isinstance(args[0], Atom):
            error = ParseError("UID needs a command (FETCH, STORE, COPY, MOVE, SEARCH, EXPUNGE)")
            error.tag = tag  # type: ignore[attr-defined]
            raise error
        name, args = f"UID {args[0].upper()}", args[1:]
    return Command(tag, name, args)


def tokenize(segments: Sequence[bytes | Literal]) -> list[Token]:
    stack: list[list[Token]] = [[]]
    index = 0
    while index < len(segments):
        text = segments[index]
        assert isinstance(text, bytes)
        literal = _LITERAL_MARK.search(text)
        if literal is not None:
            if index + 1 >= len(segments) or not isinstance(segments[index + 1], Literal):
                raise ParseError("literal announced but missing")
            text = text[:literal.start()]
        _tokenize_text(text, stack)
        if literal is not None:
            stack[-1].append(segments[index + 1])
            index += 2
        else:
            index += 1
    if len(stack) != 1:
        raise ParseError("unbalanced parenthesis: missing ')'")
    return stack[0]


def _tokenize_text(text: bytes, stack: list[list[Token]]) -> None:
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == 0x20:
            i += 1
        elif c == 0x28:  # (
            if len(stack) > MAX_NESTING:
                raise ParseError(f"[LIMIT] parenthesized lists nested deeper than {MAX_NESTING} levels")
            child: list[Token] = []
            stack[-1].append(child)
            stack.append(child)
            i += 1
        elif c == 0x29:  # )
            if len(stack) == 1:
                raise ParseError("unbalanced parenthesis: unexpected ')'")
            stack.pop()
            i += 1
        elif c == 0x22:  # "
            value, i = _quoted(text, i)
            stack[-1].append(value)
        elif c == 0x7B:  # { not at the end of a segment
            raise ParseError("literal marker must end the line")
        else:
            value, i = _atom(text, i)
            stack[-1].append(value)


def _quoted(text: bytes, start: int) -> tuple[str, int]:
    out = bytearray()
    i = start + 1
    while i < len(text):
        c = text[i]
        if c == 0x5C:  # backslash
            if i + 1 >= len(text) or text[i + 1] not in (0x5C, 0x22):
                raise ParseError("quoted string: only \\\\ and \\\" may be escaped")
            out.append(text[i + 1])
            i += 2
        elif c == 0x22:
            return out.decode("utf-8", "surrogateescape"), i + 1
        elif c in (0x0D, 0x0A, 0x00):
            raise ParseError("quoted string: CR, LF and NUL are not allowed (use a literal)")
        else:
            out.append(c)
            i += 1
    raise ParseError("quoted string not terminated")


def _atom(text: bytes, start: int) -> tuple[Atom, int]:
    i, depth = start, 0
    while i < len(text):
        c = text[i]
        if depth:
            if c == 0x5B:
                depth += 1
            elif c == 0x5D:
                depth -= 1
            elif c in _CTL or c >= 0x80:   # a section is ASCII: its text is decoded and echoed in the response
                raise ParseError("control or 8-bit character in a section")
            i += 1
            continue
        if c in _CTL:   # ends no token and starts none: refused, or the caller would loop on it
            raise ParseError(f"control character 0x{c:02x} outside a quoted string (use a literal)")
        if c in _ATOM_END or c == 0x29:
            break
        if c == 0x5B:  # [ opens a section (BODY[...], BINARY[...]) read whole
            depth = 1
        elif c >= 0x80:
            raise ParseError("8-bit character in an atom (quote the string or use a literal)")
        i += 1
    if depth:
        raise ParseError("unterminated '[' in " + text[start:i].decode("ascii", "replace"))
    return Atom(text[start:i].decode("ascii")), i


class Args:
    """Reads a command's arguments in order; every miss is a ParseError naming what was expected."""

    def __init__(self, tokens: Sequence[Token]) -> None:
        self.tokens = list(tokens)
        self.pos = 0

    def more(self) -> bool:
        return self.pos < len(self.tokens)

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.more() else None

    def next(self, what: str) -> Token:
        if not self.more():
            raise ParseError(f"missing {what}")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def atom(self, what: str) -> Atom:
        token = self.next(what)
        if not isinstance(token, Atom):
            raise ParseError(f"{what}: expected an atom")
        return token

    def astring(self, what: str) -> str:
        token = self.next(what)
        if isinstance(token, Literal):
            return token.text()
        if isinstance(token, list):
            raise ParseError(f"{what}: expected a string, got a list")
        return str(token)

    def astring_bytes(self, what: str) -> bytes:
        token = self.next(what)
        if isinstance(token, Literal):
            return token.content()
        if isinstance(token, list):
            raise ParseError(f"{what}: expected a string, got a list")
        return str(token).encode("utf-8", "surrogateescape")

    def number(self, what: str) -> int:
        token = self.atom(what)
        if not token.isdigit() or len(token) > 20:
            raise ParseError(f"{what}: expected a number, got {token!r}")
        return int(token)

    def paren_list(self, what: str) -> list[Token]:
        token = self.next(what)
        if not isinstance(token, list):
            raise ParseError(f"{what}: expected a parenthesized list")
        return token

    def optional_list(self) -> list[Token] | None:
        if isinstance(self.peek(), list):
            return self.next("list")
        return None

    def rest(self) -> list[Token]:
        tokens = self.tokens[self.pos:]
        self.pos = len(self.tokens)
        return tokens

    def end(self) -> None:
        if self.more():
            raise ParseError(f"unexpected argument {self.tokens[self.pos]!r}")
