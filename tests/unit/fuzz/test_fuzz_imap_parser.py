"""Fuzzing the IMAP command parser and the parsers of command arguments (SEARCH criteria, FETCH items,
sequence sets, flags, LIST patterns): whatever a client sends is a command or a refusal the session
answers with BAD (``ParseError``, ``BadCharset`` for SEARCH's NO), never another exception.

Work is bounded by construction, which is what is asserted (no clock): a parsed command never nests
deeper than ``MAX_NESTING`` lists, and SEARCH criteria never deeper than ``MAX_DEPTH`` levels, so the
walks over them cannot exhaust the stack; deeper input is refused with ``[LIMIT]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mailserver.blob.memory import MemoryBlobStore
from mailserver.imap.commands_mailboxes import parse_flags
from mailserver.imap.fetch import Content, parse_request
from mailserver.imap.names import InvalidName, ListPattern
from mailserver.imap.parser import MAX_NESTING, Args, Command, Literal, ParseError, parse_command
from mailserver.imap.search import MAX_DEPTH, BadCharset, Candidate, parse_query
from mailserver.imap.sequence import SequenceSet
from mailserver.mailbox.wiring import memory_context
from mailserver.model.mailbox import MailboxPath
from tests.unit.fuzz.imap_inputs import commands, search_criteria
from tests.unit.fuzz.profiles import budget

REFUSALS = (ParseError, BadCharset)
MESSAGE = (b"From: =?utf-8?q?Al=C3=AFce?= <alice@example.com>\r\nTo: bob@example.com, \"B, C\" <c@example.com>\r\n"
           b"Subject: =?iso-8859-1?b?cXXpYmVj?= report\r\nDate: Mon, 23 Nov 2026 10:00:00 +0100\r\n"
           b"Content-Type: multipart/mixed; boundary=b1\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
           b"Numbers attached.\r\n--b1\r\nContent-Type: text/html\r\nContent-Transfer-Encoding: quoted-printable\r\n"
           b"\r\n<p>caf=C3=A9</p>\r\n--b1--\r\n")

lines = st.binary(max_size=200).map(lambda b: b.replace(b"\n", b""))
reader_segments = st.tuples(lines, st.lists(st.tuples(st.binary(max_size=30), lines), max_size=4))


def nesting(tokens: list) -> int:
    """Deepest list nesting of parsed tokens, without recursion."""
    deepest, stack = 0, [(tokens, 0)]
    while stack:
        token, depth = stack.pop()
        if isinstance(token, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in token)
    return deepest


def parsed(segments: list[bytes | Literal]) -> Command | None:
    """The command, or None when refused; fails on anything but a refusal."""
    try:
        command = parse_command(segments)
    except ParseError:
        return None
    assert nesting(command.args) <= MAX_NESTING
    return command


@pytest.fixture(scope="module")
def candidate() -> Iterator[Candidate]:
    """One stored message to evaluate parsed SEARCH criteria on."""
    manager = memory_context(MemoryBlobStore()).manager
    path = MailboxPath.inbox("fuzz@example.com")
    manager.create_mailbox(path)
    meta = manager.append(path, MESSAGE, internal_date=datetime(2026, 11, 23, 9, 0, tzinfo=UTC)).metadata
    content = Content(meta, manager.read_header, lambda m: manager.read_message(m.message_id))
    yield Candidate(meta, 1, content, False, 1, meta.uid)


def arguments(command: Command, candidate: Candidate) -> None:
    """The argument parsing of the command's handler, as far as it is parsing (no mailbox is touched)."""
    args = Args(command.args)
    name = command.name.removeprefix("UID ")
    if name == "SEARCH":
        query = parse_query(args.rest())
        assert isinstance(query.predicate(candidate), bool)
    elif name in ("FETCH", "STORE", "COPY", "MOVE"):
        SequenceSet.parse(args.atom("sequence set"))
        if name == "FETCH":
            parse_request(args.rest())
        elif name == "STORE":
            args.atom("STORE item")
            rest = args.rest()
            parse_flags(rest[0] if len(rest) == 1 and isinstance(rest[0], list) else rest)
    elif name in ("LIST", "LSUB"):
        reference, pattern = args.astring("reference"), args.astring("pattern")
        try:
            ListPattern(reference, pattern).matches("INBOX.a" * 20)
        except InvalidName:   # answered NO by the session
            pass


@budget(300)
@given(reader_segments)
def test_any_octets_are_a_command_or_a_parse_error(drawn):
    first, rest = drawn
    segments: list[bytes | Literal] = [first]
    for payload, line in rest:   # a literal follows a line ending with its marker, as the reader reads it
        segments[-1] += b" {%d}" % len(payload)
        segments += [Literal(data=payload, size=len(payload)), line]
    parsed(segments)


@budget(400)
@given(command=commands())
def test_hostile_commands_and_their_arguments_are_parsed_or_refused(command, candidate):
    result = parsed(list(command.segments))
    if command.depth > MAX_NESTING:
        assert result is None, "lists nested past the limit are refused"
    if result is not None:
        try:
            arguments(result, candidate)
        except REFUSALS:
            pass


@budget(100)
@given(depth=st.one_of(st.integers(0, 8), st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3), st.integers(0, 20 * MAX_DEPTH)),
       kinds=st.lists(st.sampled_from(["OR", "NOT", "("]), min_size=1, max_size=4))
def test_search_criteria_within_the_limit_are_evaluated_and_deeper_ones_refused(depth, kinds, candidate):
    command = parsed([b"s1 UID SEARCH CHARSET UTF-8 " + search_criteria(depth, kinds)])
    try:
        query = parse_query(command.args) if command is not None else None
    except ParseError as refused:
        assert depth > MAX_DEPTH and "[LIMIT]" in str(refused)
        return
    if command is None:
        assert depth > MAX_NESTING
        return
    assert depth <= MAX_DEPTH and query is not None
    assert isinstance(query.predicate(candidate), bool)
