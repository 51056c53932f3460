"""Response formatting and mailbox names on the wire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from mailserver.imap.names import InvalidName, ListPattern, decode_mutf7, encode_mutf7, normalize
from mailserver.imap.response import (
    astring,
    date_time,
    flag_list,
    literal,
    nstring,
    parse_date,
    parse_date_time,
    quoted,
    string,
)
from mailserver.model.flags import Flags, SystemFlag


def test_strings_are_quoted_when_possible_else_literals():
    assert quoted('say "hi" \\o/') == b'"say \\"hi\\" \\\\o/"'
    assert string("plain") == b'"plain"'
    assert string("line\r\nbreak") == b"{11}\r\nline\r\nbreak"
    assert string("caf\u00e9") == b"{5}\r\ncaf\xc3\xa9"
    assert string("x" * 2000).startswith(b"{2000}\r\n")
    assert literal(b"") == b"{0}\r\n"
    assert nstring(None) == b"NIL" and nstring("") == b'""'


def test_astring_is_a_bare_atom_only_when_safe():
    assert astring("INBOX") == b"INBOX"
    assert astring("Sent Items") == b'"Sent Items"'
    assert astring("NIL") == b'"NIL"'
    assert astring("") == b'""'
    assert astring("a*b") == b'"a*b"'


def test_flag_list_and_recent():
    flags = Flags.of(SystemFlag.SEEN, SystemFlag.ANSWERED, user=["$Work"])
    assert flag_list(flags) == b"(\\Answered \\Seen $Work)"
    assert flag_list(Flags(), recent=True) == b"(\\Recent)"


def test_dates_round_trip():
    when = datetime(1996, 7, 17, 2, 44, 25, tzinfo=timezone(timedelta(hours=-7)))
    assert date_time(when) == b'"17-Jul-1996 09:44:25 +0000"', "the instant, told in UTC"
    assert parse_date_time("17-Jul-1996 02:44:25 -0700") == when
    assert parse_date_time(" 7-Jul-1996 02:44:25 +0000") == datetime(1996, 7, 7, 2, 44, 25, tzinfo=UTC)
    assert parse_date("1-Feb-1994") == datetime(1994, 2, 1)
    for bad in ("17-Jux-1996 02:44:25 -0700", "yesterday", "17-Jul-1996"):
        with pytest.raises(ValueError):
            parse_date_time(bad)


def test_modified_utf7_both_ways():
    for name in ("INBOX", "Entw\u00fcrfe", "\u65e5\u672c\u8a9e", "a&b", "~peter/mail/\u53f0\u5317/\u65e5\u672c\u8a9e"):
        assert decode_mutf7(encode_mutf7(name)) == name
    assert encode_mutf7("Entw\u00fcrfe") == "Entw&APw-rfe"
    assert encode_mutf7("a&b") == "a&-b"
    assert decode_mutf7("~peter/mail/&U,BTFw-/&ZeVnLIqe-") == "~peter/mail/\u53f0\u5317/\u65e5\u672c\u8a9e"
    with pytest.raises(InvalidName):
        decode_mutf7("&Jjo!-")


def test_names_are_normalized_and_patterns_match_the_hierarchy():
    assert normalize("inbox") == "INBOX" and normalize("Inbox.Sub") == "INBOX.Sub"
    assert normalize("Archive.") == "Archive"
    names = ["INBOX", "INBOX.Sub", "Archive", "Archive.2026", "Archive.2026.Nov"]
    assert [n for n in names if ListPattern("", "*").matches(n)] == names
    assert [n for n in names if ListPattern("", "%").matches(n)] == ["INBOX", "Archive"]
    assert [n for n in names if ListPattern("Archive.", "%").matches(n)] == ["Archive.2026"]
    assert [n for n in names if ListPattern("", "inbox*").matches(n)] == ["INBOX", "INBOX.Sub"]
    assert [n for n in names if ListPattern("", "Archive.*.Nov").matches(n)] == ["Archive.2026.Nov"]
