"""ESEARCH (RFC 4731): SEARCH RETURN options parsed, and the * ESEARCH reply in James's format."""

from __future__ import annotations

import pytest

from mailserver.imap.esearch import esearch_response, split_return_options
from mailserver.imap.parser import ParseError, tokenize
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login


def split(text: str):
    return split_return_options(tokenize([text.encode()]))


def test_a_search_without_return_has_no_options_and_keeps_its_criteria():
    assert split("FLAGGED UNSEEN") == (None, ["FLAGGED", "UNSEEN"])


def test_return_options_are_read_case_insensitively_and_an_empty_list_means_all():
    assert split("return (min Max COUNT) FLAGGED") == (frozenset({"MIN", "MAX", "COUNT"}), ["FLAGGED"])
    assert split("RETURN () ALL")[0] == frozenset({"ALL"})


@pytest.mark.parametrize("text", ["RETURN FLAGGED", "RETURN (SAVE) FLAGGED", "RETURN (PARTIAL 1:10) ALL",
                                  'RETURN ("MIN") ALL'])
def test_unknown_or_malformed_return_options_are_refused(text):
    with pytest.raises(ParseError):
        split(text)


def test_the_reply_lists_min_max_count_all_in_james_order():
    line = esearch_response("g", by_uid=False, options=frozenset({"ALL", "COUNT", "MAX", "MIN"}),
                            numbers=[1, 2, 4, 5], modseq=None)
    assert line == b'* ESEARCH (TAG "g") MIN 1 MAX 5 COUNT 4 ALL 1:2,4:5\r\n'


def test_uid_search_says_uid_and_the_modseq_of_the_query_comes_last():
    line = esearch_response("k", by_uid=True, options=frozenset({"MIN"}), numbers=[7, 9], modseq=12)
    assert line == b'* ESEARCH (TAG "k") UID MIN 7 MODSEQ 12\r\n'


def test_no_match_leaves_out_min_max_and_all_but_counts_zero():
    everything = frozenset({"MIN", "MAX", "COUNT", "ALL"})
    assert esearch_response("s", by_uid=True, options=everything, numbers=[], modseq=None) == \
        b'* ESEARCH (TAG "s") UID COUNT 0\r\n'
    assert esearch_response("t", by_uid=False, options=frozenset({"MIN"}), numbers=[], modseq=None) == \
        b'* ESEARCH (TAG "t")\r\n'


def test_search_return_over_a_session(world):
    raw = RawImap(world.port)
    login(raw)
    assert b" ESEARCH" in raw.command(b"c", b"CAPABILITY")[0]
    for _ in range(3):
        raw.send(b"a APPEND INBOX {12+}\r\nSubject: x\r\n\r\n")
        assert raw.until_tagged(b"a")[-1].startswith(b"a OK")
    raw.command(b"s", b"SELECT INBOX")
    raw.command(b"f", b"STORE 1,3 +FLAGS.SILENT (\\Flagged)")
    assert raw.command(b"e", b"SEARCH RETURN (MIN MAX COUNT) FLAGGED") == \
        [b'* ESEARCH (TAG "e") MIN 1 MAX 3 COUNT 2\r\n', b"e OK SEARCH completed\r\n"]
    assert raw.command(b"u", b"UID SEARCH RETURN () FLAGGED") == \
        [b'* ESEARCH (TAG "u") UID ALL 1,3\r\n', b"u OK SEARCH completed\r\n"]
    assert raw.command(b"p", b"SEARCH FLAGGED") == [b"* SEARCH 1 3\r\n", b"p OK SEARCH completed\r\n"]
