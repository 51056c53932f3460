"""The nesting limits themselves: where the command parser, the SEARCH parser and the IMAP MIME tree
stop, and what the MIME tree costs on hostile messages (parts, memory, header values)."""

from __future__ import annotations

import tracemalloc

import pytest

from mailserver.imap import mime
from mailserver.imap.bodystructure import body_structure
from mailserver.imap.parser import MAX_NESTING, ParseError, tokenize
from mailserver.imap.search import MAX_DEPTH as SEARCH_DEPTH
from mailserver.imap.search import parse_query
from mailserver.mailbox.content import MAX_DEPTH, MAX_PARTS, MAX_STRUCTURE_HEADER
from tests.unit.imap.test_imap_nesting import nested_messages


def test_lists_nest_up_to_the_limit_and_no_deeper():
    tokens = tokenize([b"(" * MAX_NESTING + b"x" + b")" * MAX_NESTING])
    for _ in range(MAX_NESTING):
        (tokens,) = tokens
    assert tokens == ["x"]
    with pytest.raises(ParseError, match=rf"^\[LIMIT\] parenthesized lists nested deeper than {MAX_NESTING} levels"):
        tokenize([b"(" * (MAX_NESTING + 1) + b"x" + b")" * (MAX_NESTING + 1)])


@pytest.mark.parametrize("nest", [
    lambda n: "OR ALL " * n + "ALL",
    lambda n: "OR " * n + "ALL " * (n + 1),
    lambda n: "NOT " * n + "ALL",
    lambda n: "(" * n + "ALL" + ")" * n,
    lambda n: "(NOT " * (n // 2) + "ALL" + ")" * (n // 2),
], ids=["or-right", "or-left", "not", "parentheses", "mixed"])
def test_search_criteria_nest_up_to_the_limit_and_no_deeper(nest):
    query = parse_query(tokenize([nest(SEARCH_DEPTH).encode()]))
    assert query.predicate(None) in (True, False)   # evaluates down to the bottom without recursion trouble
    deeper = SEARCH_DEPTH + 2   # even, for the mixed form
    with pytest.raises(ParseError, match=r"^\[LIMIT\] .*nested deeper than 100 levels"):
        parse_query(tokenize([nest(deeper).encode()]))


def messages_described(structure: bytes) -> int:
    return structure.count(b'("MESSAGE" "RFC822" NIL NIL NIL "7BIT" ')


def test_attached_messages_are_described_down_to_the_depth_limit_and_deeper_ones_are_opaque_text():
    at_limit = body_structure(mime.parse(nested_messages(MAX_DEPTH)))
    assert messages_described(at_limit) == MAX_DEPTH
    text = b"needle at the bottom\r\n"
    assert b'("TEXT" "PLAIN" ("charset" "us-ascii") NIL NIL "7BIT" %d 1 NIL NIL NIL NIL)' % len(text) in at_limit
    below = body_structure(mime.parse(nested_messages(MAX_DEPTH + 1)))
    assert messages_described(below) == MAX_DEPTH
    opaque = len(b"Content-Type: text/plain\r\n\r\n" + text)   # the undescended message: its header and text
    assert b'("TEXT" "PLAIN" ("charset" "us-ascii") NIL NIL "7BIT" %d 3 NIL NIL NIL NIL)' % opaque in below
    assert mime.find(mime.parse(nested_messages(MAX_DEPTH + 1)), [1] * (MAX_DEPTH + 1)).body.endswith(b"bottom\r\n")


def count_parts(root: mime.Part) -> int:
    count, stack = 0, [root]
    while stack:
        part = stack.pop()
        count += 1
        stack.extend(part.children)
        if part.message is not None:
            stack.append(part.message)
    return count


def test_a_message_of_200_000_parts_is_described_by_its_first_max_parts():
    raw = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n" + b"--b\r\n\r\nx\r\n" * 200_000 + b"--b--\r\n"
    root = mime.parse(raw)
    assert count_parts(root) == MAX_PARTS
    assert body_structure(root).count(b'("TEXT" "PLAIN"') == MAX_PARTS - 1


def test_the_part_budget_is_shared_by_every_level():
    inner = b"Content-Type: multipart/mixed; boundary=i\r\n\r\n" + b"--i\r\n\r\ny\r\n" * 50 + b"--i--"
    raw = b"Content-Type: multipart/mixed; boundary=o\r\n\r\n" + (b"--o\r\n" + inner + b"\r\n") * 100 + b"--o--\r\n"
    root = mime.parse(raw)
    assert count_parts(root) == MAX_PARTS
    assert len(root.children) == 100   # every outer part is there; the budget cuts the inner ones


def test_the_tree_refers_to_the_message_instead_of_copying_it_at_every_level():
    raw = nested_messages(MAX_DEPTH - 1) + b"x" * (4 * 1024 * 1024)
    tracemalloc.start()
    try:
        root = mime.parse(raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(raw) // 4, f"{peak} bytes allocated to parse a {len(raw)}-byte message"
    assert mime.find(root, [1] * (MAX_DEPTH - 1)).body.endswith(b"x" * 100)


def test_structural_header_values_are_cut_before_their_parameters_are_parsed():
    raw = b"Content-Type: application/x" + b';a="b"' * 100_000 + b"\r\n\r\nbody"
    structure = body_structure(mime.parse(raw))
    assert structure.startswith(b'("APPLICATION" "X" ("a" "b" "a" "b" ')
    assert len(structure) < 2 * MAX_STRUCTURE_HEADER
