"""Hostile IMAP commands for the fuzzers, as the reader hands them to the parser (segments) and as
bytes for the wire: IMAP's own words in any order, sections, sequence sets, dates, quoted strings
with bad escapes, literals, parentheses nested far past the limit or unbalanced, 8-bit octets."""

from __future__ import annotations

import re
from dataclasses import dataclass

from hypothesis import strategies as st

from mailserver.imap.parser import Literal

COMMANDS = ["CAPABILITY", "NOOP", "ID", "ENABLE", "SELECT", "EXAMINE", "CREATE", "DELETE", "RENAME",
            "SUBSCRIBE", "UNSUBSCRIBE", "LIST", "LSUB", "STATUS", "APPEND", "NAMESPACE", "CHECK", "CLOSE",
            "UNSELECT", "EXPUNGE", "SEARCH", "FETCH", "STORE", "COPY", "MOVE", "UID", "LOGIN", "XYZZY"]
WORDS = [
    # SEARCH keys and their arguments
    "ALL", "ANSWERED", "BCC", "BEFORE", "BODY", "CC", "DELETED", "DRAFT", "FLAGGED", "FROM", "HEADER",
    "KEYWORD", "LARGER", "NEW", "NOT", "OLD", "ON", "OR", "RECENT", "SEEN", "SENTBEFORE", "SENTON",
    "SENTSINCE", "SINCE", "SMALLER", "SUBJECT", "TEXT", "TO", "UID", "UNANSWERED", "UNDELETED", "UNDRAFT",
    "UNFLAGGED", "UNKEYWORD", "UNSEEN", "MODSEQ", "CHARSET", "UTF-8", "KOI8-R", "/flags/\\seen", "all",
    "1-Jan-2026", "31-Feb-2026", "1-Foo-99", "99999999999-Jan-2026",
    # FETCH items, sections and partials
    "FLAGS", "INTERNALDATE", "RFC822", "RFC822.SIZE", "RFC822.HEADER", "RFC822.TEXT", "ENVELOPE",
    "BODYSTRUCTURE", "FAST", "FULL", "BODY[]", "BODY.PEEK[]", "BODY[TEXT]", "BODY[HEADER]", "BODY[1]",
    "BODY[1.2.3]", "BODY[2.MIME]", "BODY[1.HEADER]", "BODY[1.TEXT]", "BODY[0]", "BODY[99999.1]",
    "BODY.PEEK[HEADER.FIELDS (From To)]", "BODY[HEADER.FIELDS.NOT (Subject)]", "BODY[HEADER.FIELDS ()]",
    "BODY[]<0>", "BODY[]<0.10>", "BODY[]<5.0>", "BODY[]<99999999999.1>", "BINARY[1]", "BODY[MIME]",
    "BODY[1.2.3.4.5.6.7.8.9.10.11.12.13.14.15.16.17.18.19.20.21.22.23.24.25]", "BODY[", "]", "BODY[[]]",
    "CHANGEDSINCE", "(CHANGEDSINCE 1)",
    # STORE, STATUS, LIST, flags
    "+FLAGS", "-FLAGS.SILENT", "FLAGS.SILENT", "\\Seen", "\\Deleted", "\\Recent", "\\Bogus", "$Junk",
    "MESSAGES", "UIDNEXT", "UIDVALIDITY", "UNSEEN", "HIGHESTMODSEQ", "CONDSTORE", "NIL", "INBOX", "Inbox",
    "%", "*", "*a*a*a*a*a*a*a*b", "INBOX.%", "&AOk-", "&-", "&Jjo!", "&ZeVnLIqe-", "a.b.c", ".", "..",
    # numbers and sequence sets
    "0", "1", "2", "3", "4294967295", "4294967296", "99999999999999999999999", "-1", "1:*", "*:1", "1,2,3",
    "2:4,7", "1:", ":", ",", "1,,2", "*", "1:2:3",
]
# The rest of a command line: any octets, or printable ASCII, which gets past the 8-bit refusal to the parsers.
line_octets = st.one_of(st.binary(max_size=300),
                        st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=300).map(str.encode))
_LITERAL_MARK = re.compile(rb"\{\d{1,12}\+?\}$")
_ATOM_CHARS = st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters='(){ %*"\\]')


@dataclass(frozen=True)
class Command:
    """One generated command: ``segments`` for ``parse_command``, ``wire`` for a socket."""

    segments: tuple[bytes | Literal, ...]
    wire: bytes
    depth: int   # deepest parenthesis nesting written

    @property
    def wire_safe(self) -> bool:
        """False when random octets end the command with a literal marker: the server would wait for it."""
        last = self.segments[-1]
        return not (isinstance(last, bytes) and _LITERAL_MARK.search(last))


def _quoted(text: str, broken: bool) -> bytes:
    if broken:   # an escape of a character other than \ and ", or no closing quote
        return b'"' + text.encode("utf-8", "surrogatepass") + (b'\\x"' if text else b"")
    return b'"' + text.encode("utf-8", "surrogatepass").replace(b"\\", b"\\\\").replace(b'"', b'\\"') + b'"'


@st.composite
def _token(draw: st.DrawFn) -> bytes | Literal:
    kind = draw(st.sampled_from(["word", "word", "word", "atom", "quoted", "literal", "bytes", "paren"]))
    if kind == "word":
        return draw(st.sampled_from(WORDS)).encode()
    if kind == "atom":
        return draw(st.text(_ATOM_CHARS, min_size=1, max_size=12)).encode()
    if kind == "quoted":
        return _quoted(draw(st.text(max_size=12)), draw(st.booleans()))
    if kind == "literal":
        return Literal(data=draw(st.binary(max_size=24)))
    if kind == "bytes":   # anything but the line end the reader strips
        return draw(st.binary(min_size=1, max_size=12)).replace(b"\n", b" ")
    return draw(st.sampled_from([b"(", b")", b"((", b"))", b"()", b"[", b"]"]))


def _nest(tokens: list[bytes | Literal], opened: int, closed: int) -> list[bytes | Literal]:
    return [b"(" * opened, *tokens, b")" * closed] if opened or closed else tokens


@st.composite
def commands(draw: st.DrawFn, *, max_depth: int = 300) -> Command:
    """A tag, a command name (or UID and one), then hostile tokens, optionally in deep parentheses."""
    tag = draw(st.one_of(st.just(b"a1"), st.sampled_from([b"a1", b"A.2", b"*", b"+", b"(", b"", b"\xff", b"t" * 40])))
    name = draw(st.sampled_from(COMMANDS)).encode()
    tokens: list[bytes | Literal] = [tag, name]
    if name == b"UID":
        tokens.append(draw(st.sampled_from([b"FETCH", b"SEARCH", b"STORE", b"COPY", b"MOVE", b"EXPUNGE", b"X"])))
    body = draw(st.lists(_token(), max_size=12))
    opened = draw(st.one_of(st.just(0), st.integers(0, 8), st.integers(0, max_depth)))
    closed = draw(st.one_of(st.just(opened), st.integers(0, max_depth)))
    tokens += _nest(body, opened, closed)
    segments, wire = _segments(tokens, draw(st.booleans()))
    return Command(tuple(segments), wire, opened)


def _segments(tokens: list[bytes | Literal], synchronizing: bool) -> tuple[list[bytes | Literal], bytes]:
    """Joined with spaces; a literal ends the current segment with ``{n}`` (or ``{n+}``) as the reader does."""
    segments: list[bytes | Literal] = []
    wire = bytearray()
    line = bytearray()
    for token in tokens:
        if isinstance(token, Literal):
            data = token.data or b""
            mark = b"{%d}" % len(data) if synchronizing else b"{%d+}" % len(data)
            line += (b" " if line else b"") + mark
            segments += [bytes(line), Literal(data=data, size=len(data))]
            wire += line + b"\r\n" + data
            line = bytearray()
        else:
            line += (b" " if line and token not in (b")", b"))") else b"") + token
    segments.append(bytes(line))
    wire += line + b"\r\n"
    return segments, bytes(wire)


def search_criteria(depth: int, kinds: list[str]) -> bytes:
    """SEARCH criteria nested ``depth`` levels deep through OR, NOT and parentheses, as ``kinds`` says."""
    criteria = b"ALL"
    for level in range(depth):
        kind = kinds[level % len(kinds)]
        if kind == "OR":
            criteria = b"OR " + criteria + b" SEEN"
        elif kind == "NOT":
            criteria = b"NOT " + criteria
        else:
            criteria = b"(" + criteria + b")"
    return criteria


# ---------------------------------------------------------------- commands that follow the grammar
SEQUENCE_SETS = ["1", "2", "*", "1:*", "*:1", "1,3:4", "2:*", "9999", "4294967295", "1:4294967295", "0", "1,*"]
MAILBOXES = ["INBOX", "inbox", "Archive", "Archive.2026", "&AOk-t&AOk-", "&Jjo-", "a%b", "a*b", "INBOX.Sub", ".",
             "a..b", "\"quoted name\"", "\"\"", "NIL", "&-", "&ZZZ", "x" * 300]
FETCH_ATTRIBUTES = ["FLAGS", "UID", "INTERNALDATE", "RFC822.SIZE", "ENVELOPE", "BODYSTRUCTURE", "BODY", "RFC822",
                    "RFC822.HEADER", "RFC822.TEXT", "MODSEQ", "ALL", "FAST", "FULL"]
FLAGS = ["\\Seen", "\\Answered", "\\Flagged", "\\Deleted", "\\Draft", "\\Recent", "$Junk", "custom", "\\Bogus", "a]b"]
STATUS_ITEMS = ["MESSAGES", "RECENT", "UIDNEXT", "UIDVALIDITY", "UNSEEN", "HIGHESTMODSEQ", "SIZE", "BOGUS"]


@st.composite
def _section(draw: st.DrawFn) -> str:
    numbers = ".".join(str(n) for n in draw(st.lists(st.integers(0, 5), max_size=5)))
    text = draw(st.sampled_from(["", "HEADER", "TEXT", "MIME", "HEADER.FIELDS (From Subject)",
                                 "HEADER.FIELDS.NOT (To)", "HEADER.FIELDS ()", "BOGUS"]))
    spec = ".".join(filter(None, [numbers, text]))
    partial = draw(st.sampled_from(["", "<0>", "<0.1>", "<3.100>", "<99999.5>", "<1.0>"]))
    return f"BODY{draw(st.sampled_from(['', '.PEEK']))}[{spec}]{partial}"


@st.composite
def _criteria(draw: st.DrawFn, depth: int = 0) -> str:
    key = draw(st.sampled_from(["ALL", "SEEN", "UNSEEN", "NEW", "DELETED", "FLAGGED", "LARGER 10", "SMALLER 99999",
                                "SINCE 1-Jan-2020", "BEFORE 31-Dec-2030", "SENTON 23-Nov-2026", "BODY hello",
                                "TEXT bottom", "SUBJECT deep", "FROM example", "HEADER Content-Type multipart",
                                "HEADER X-Missing \"\"", "KEYWORD $Junk", "UID 1:*", "1:*", "MODSEQ 1",
                                "TO \"B, C\"", "BODY \"\\u00e9\"", "OR", "NOT", "()"]))
    if depth < 4 and key == "OR":
        return f"OR {draw(_criteria(depth + 1))} {draw(_criteria(depth + 1))}"
    if depth < 4 and key == "NOT":
        return f"NOT {draw(_criteria(depth + 1))}"
    if depth < 4 and key == "()":
        return f"({draw(_criteria(depth + 1))})"
    return key


def _list(items: list[str]) -> str:
    return "(" + " ".join(items) + ")"


@st.composite
def grammar_commands(draw: st.DrawFn, messages: st.SearchStrategy[bytes]) -> bytes:
    """One command of the grammar (``a1 ...\\r\\n``) with hostile values in its slots; an APPEND carries
    a message of ``messages`` as a literal, sent without waiting for the continuation (it fits the limit)."""
    uid = draw(st.sampled_from(["", "UID "]))
    seq = draw(st.sampled_from(SEQUENCE_SETS))
    mailbox = draw(st.sampled_from(MAILBOXES))
    flags = _list(draw(st.lists(st.sampled_from(FLAGS), max_size=3)))
    fetch = draw(st.lists(st.one_of(st.sampled_from(FETCH_ATTRIBUTES), _section()), min_size=1, max_size=4))
    command = draw(st.sampled_from([
        f"{uid}FETCH {seq} {_list(fetch) if len(fetch) > 1 else fetch[0]}",
        f"FETCH {seq} (FLAGS) (CHANGEDSINCE {draw(st.sampled_from(['0', '1', '99999999999999999999']))})",
        f"{uid}SEARCH {draw(st.sampled_from(['', 'CHARSET UTF-8 ', 'CHARSET KOI8-R ']))}{draw(_criteria())}",
        f"{uid}STORE {seq} {draw(st.sampled_from(['FLAGS', '+FLAGS', '-FLAGS.SILENT', 'X-FLAGS']))} {flags}",
        f"{uid}COPY {seq} {mailbox}", f"{uid}MOVE {seq} {mailbox}", f"UID EXPUNGE {seq}", "EXPUNGE", "CHECK",
        f"LIST \"\" {mailbox}", f"LSUB \"{draw(st.sampled_from(['', 'INBOX.', '%']))}\" *", f"CREATE {mailbox}",
        f"DELETE {mailbox}", f"RENAME {mailbox} {draw(st.sampled_from(MAILBOXES))}", f"SUBSCRIBE {mailbox}",
        f"STATUS {mailbox} {_list(draw(st.lists(st.sampled_from(STATUS_ITEMS), max_size=4)))}",
        f"EXAMINE {mailbox}", f"SELECT {mailbox} (CONDSTORE)", "ENABLE CONDSTORE", "NAMESPACE",
        "ID (\"name\" \"fuzz\" \"version\" NIL)", "ID NIL", "UNSELECT", "CLOSE", "NOOP",
        "APPEND",
    ]))
    if command != "APPEND":
        return b"a1 " + command.encode() + b"\r\n"
    message = draw(messages)
    date = draw(st.sampled_from(["", "\"23-Nov-2026 10:00:00 +0100\" ", "\"99-Foo-2026 99:99:99 +9999\" "]))
    return b"a1 APPEND %s %s %s{%d}\r\n%s\r\n" % (mailbox.encode(), flags.encode(), date.encode(),
                                                   len(message), message)
