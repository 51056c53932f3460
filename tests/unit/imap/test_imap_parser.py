"""Command parsing: tokens, quoted strings, literals, lists, sections; sequence sets."""

from __future__ import annotations

import pytest

from mailserver.imap.parser import Args, Atom, Literal, ParseError, parse_command, tokenize
from mailserver.imap.sequence import SequenceSet, format_set


def test_atoms_quoted_strings_lists_and_nil():
    tokens = tokenize([b'A1 LOGIN "al\\"ice" pa\\ss (\\Seen $Work) NIL ""'])
    assert tokens == ["A1", "LOGIN", 'al"ice', "pa\\ss", ["\\Seen", "$Work"], "NIL", ""]
    assert isinstance(tokens[2], str) and not isinstance(tokens[2], Atom)
    assert isinstance(tokens[5], Atom) and isinstance(tokens[6], str) and not isinstance(tokens[6], Atom)


def test_fetch_sections_are_one_atom_with_spaces_and_parentheses_inside_brackets():
    command = parse_command([b"a2 UID FETCH 1:* (FLAGS BODY.PEEK[HEADER.FIELDS (From To)]<0.100> BODY[1.2.MIME])"])
    assert command.name == "UID FETCH"
    assert command.args == ["1:*", ["FLAGS", "BODY.PEEK[HEADER.FIELDS (From To)]<0.100>", "BODY[1.2.MIME]"]]


def test_literals_come_from_their_own_segments():
    literal = Literal(data=b"hello\r\nworld", size=12)
    command = parse_command([b"A3 APPEND INBOX (\\Seen) {12}", literal, b""])
    assert command.name == "APPEND"
    assert command.args[:2] == ["INBOX", ["\\Seen"]] and command.args[2] is literal
    mixed = parse_command([b"A4 LOGIN {5}", Literal(data=b"alice", size=5), b' "secret"'])
    args = Args(mixed.args)
    assert (args.astring("user"), args.astring("password")) == ("alice", "secret")
    args.end()


@pytest.mark.parametrize("line, message", [
    (b"A1 LOGIN (alice", "missing '\\)'"),
    (b"A1 LOGIN alice)", "unexpected '\\)'"),
    (b'A1 LOGIN "alice', "not terminated"),
    (b'A1 LOGIN "a\\b"', "escaped"),
    (b"A1 FETCH 1 BODY[HEADER", "unterminated"),
    (b"A1 LOGIN {5} x", "must end the line"),
    (b"A1 LOGIN \xc3\xa9", "8-bit"),
    (b"A1", "missing command name"),
    (b"A1 UID", "UID needs a command"),
])
def test_malformed_commands_are_parse_errors_carrying_the_tag(line, message):
    with pytest.raises(ParseError, match=message) as error:
        parse_command([line])
    assert error.value.tag == "A1"


def test_a_missing_tag_is_a_parse_error_without_tag():
    with pytest.raises(ParseError, match="tag"):
        parse_command([b"(foo) NOOP"])


def test_args_name_what_they_expected():
    args = Args([Atom("1"), ["a"]])
    assert args.number("count") == 1
    with pytest.raises(ParseError, match="mailbox: expected a string"):
        args.astring("mailbox")
    with pytest.raises(ParseError, match="missing flags"):
        Args([]).paren_list("flags")


def test_sequence_sets_by_number_and_by_uid():
    assert SequenceSet.parse("1:3,5,7:*").sequence_numbers(8) == [1, 2, 3, 5, 7, 8]
    assert SequenceSet.parse("4:2").sequence_numbers(4) == [2, 3, 4]
    assert SequenceSet.parse("*").sequence_numbers(3) == [3]
    with pytest.raises(ParseError, match="out of range"):
        SequenceSet.parse("1:5").sequence_numbers(3)
    assert SequenceSet.parse("*").sequence_numbers(0) == [], "* names nothing in an empty mailbox (James: OK)"
    uids = [2, 5, 9, 12]
    assert SequenceSet.parse("1:5").uids(uids) == [2, 5]
    assert SequenceSet.parse("13:*").uids(uids) == [12], "a range through * reaches the last uid (RFC 3501)"
    assert SequenceSet.parse("20").uids(uids) == []
    assert SequenceSet.parse("1:4294967295").uids(uids) == uids
    assert SequenceSet.parse("3:*").contains(7, 7) and not SequenceSet.parse("3:5").contains(7, 7)


@pytest.mark.parametrize("text", ["", "0", "1:", ":3", "a", "1,,2", "1:2:3", "-1", "99999999999"])
def test_invalid_sequence_sets(text):
    with pytest.raises(ParseError):
        SequenceSet.parse(text)


def test_format_set_keeps_order_and_compresses_runs():
    assert format_set([1, 2, 3, 5, 7, 8]) == "1:3,5,7:8"
    assert format_set([4, 1]) == "4,1"
