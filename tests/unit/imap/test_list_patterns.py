"""LIST/LSUB wildcards: the same answers as the RFC 3501 definition, in time linear in the name."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mailserver.imap.names import MAX_PATTERN_LENGTH, InvalidName, ListPattern
from mailserver.model.mailbox import DELIMITER


def reference_match(pattern: str, name: str) -> bool:
    """RFC 3501 6.3.8 written as a regex: the oracle, safe here on short generated inputs only."""
    parts = [".*" if c == "*" else f"[^{re.escape(DELIMITER)}]*" if c == "%" else re.escape(c) for c in pattern]
    return re.fullmatch("".join(parts), name, re.DOTALL) is not None


ALPHABET = st.sampled_from(["a", "b", DELIMITER, "\u00e9"])


@settings(max_examples=400, deadline=None)
@given(pattern=st.lists(st.sampled_from(["a", "b", DELIMITER, "*", "%"]), max_size=8).map("".join),
       name=st.lists(ALPHABET, max_size=10).map("".join))
def test_wildcards_answer_as_the_rfc_defines_them(pattern, name):
    assert ListPattern("", pattern).matches(name) == reference_match(pattern, name)


def test_reference_and_inbox_spelling():
    names = ["INBOX", "INBOX.Sub", "Archive", "Archive.2026", "Archive.2026.Nov"]
    assert [n for n in names if ListPattern("Archive.", "*").matches(n)] == ["Archive.2026", "Archive.2026.Nov"]
    assert [n for n in names if ListPattern("", "Inbox.%").matches(n)] == ["INBOX.Sub"]
    assert [n for n in names if ListPattern("", "%.%").matches(n)] == ["INBOX.Sub", "Archive.2026"]


def test_the_pattern_that_froze_the_server_is_answered_by_a_bounded_number_of_steps():
    # 15 stars over 199 "a": a backtracking regex explores C(199, 15) splits before it fails.
    pattern = ListPattern("", "*a" * 14 + "*ab")
    assert not pattern.matches("a" * 199)
    assert pattern.matches("a" * 198 + "b")


def test_a_pattern_longer_than_the_limit_is_refused():
    with pytest.raises(InvalidName, match=str(MAX_PATTERN_LENGTH)):
        ListPattern("", "*" * (MAX_PATTERN_LENGTH + 1))
