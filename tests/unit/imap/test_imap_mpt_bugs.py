"""Protocol bugs that James's MPT scripts found, each checked with imaplib against the memory server."""

from __future__ import annotations

import pytest

from mailserver.imap.parser import ParseError
from mailserver.imap.sequence import SequenceSet


def test_fetch_one_to_star_on_an_empty_mailbox_answers_ok(world):
    client = world.client()
    assert client.select("INBOX") == ("OK", [b"0"])
    status, data = client.fetch("1:*", "(UID)")
    assert status == "OK" and data == [None]
    status, _ = client.uid("FETCH", "1:*", "(UID)")
    assert status == "OK"
    client.logout()


def test_a_set_without_star_beyond_an_empty_mailbox_is_still_refused():
    with pytest.raises(ParseError):
        SequenceSet.parse("1").sequence_numbers(0)
    assert SequenceSet.parse("1:*").sequence_numbers(0) == []
