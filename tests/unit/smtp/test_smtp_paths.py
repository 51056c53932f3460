"""IntakeSMTP parses MAIL/RCPT paths exactly as the aiosmtpd it replaces the parser of."""

from __future__ import annotations

import string
from types import SimpleNamespace

import pytest
from aiosmtpd.smtp import SMTP
from hypothesis import given, settings
from hypothesis import strategies as st

from mailserver.smtp.paths import _SIMPLE_PATH
from mailserver.smtp.server import IntakeSMTP

PATHS = ["", "<>", "<alice@example.com>", "<alice@example.com> SIZE=1000 BODY=8BITMIME", "alice@example.com",
         '<"quoted local"@example.com>', "<@relay.example:alice@example.com>", "<alice@[192.0.2.1]>", "<alice>",
         "<alice@example.com", "not an address", "<a@b@c>", " <spaced@example.com>", "<" + "x" * 70 + "@example.com>",
         # at the edges of the fast path (paths.py)
         "<a@b.c> (comment) SIZE=1", "<a@b.c>(comment)", "<a@b.c> ", "<a.b@c> SIZE=1 ", "<a@b.c>SIZE=1",
         "<a..b@c>", "<.a@c>", "<a.@c>", "<a@b..c>", "<a@b.>", "<a @b.c>", "<a@b.c >", "<a(c)@b>", "<a@-b>",
         "<é@example.com>", "<a@exämple.com>"]


@pytest.mark.parametrize("limit", [0, 64])
@pytest.mark.parametrize("path", PATHS)
def test_a_path_parses_as_aiosmtpd_parses_it(path, limit):
    session = SimpleNamespace(local_part_limit=limit)
    assert IntakeSMTP._getaddr(session, path) == SMTP._getaddr(session, path)


# Paths built from the pieces the fast path decides on (atoms, dots, labels, blanks, comments,
# brackets, parameters), so that most examples sit right at its edges.
_PIECES = st.sampled_from(["a", "Z9", "x+y", "o'k", "-", ".", "..", "@", "<", ">", " ", "\t", "(c)", "(", ")",
                           '"', "[1.2.3.4]", ",", ":", "\\", "=", "SIZE=10", " BODY=8BITMIME", "é", "_", "~"])


@given(st.lists(_PIECES, max_size=12).map("".join))
@settings(max_examples=3000, deadline=None)
def test_any_path_from_tricky_pieces_parses_as_aiosmtpd_parses_it(path):
    session = SimpleNamespace(local_part_limit=64)
    assert _outcome(IntakeSMTP._getaddr, session, path) == _outcome(SMTP._getaddr, session, path)


def _outcome(getaddr, session, path):
    """The result, or the type of what was raised: the standard parser has inputs it fails on with
    an IndexError, and those must fail the same way."""
    try:
        return getaddr(session, path)
    except Exception as exc:
        return type(exc)


_ATOMS = st.text(alphabet=string.ascii_letters + string.digits + "!#$%&'*+/=?^_`{|}~-", min_size=1, max_size=8)
_LABELS = st.text(alphabet=string.ascii_letters + string.digits + "-", min_size=1, max_size=8)


@given(local=st.lists(_ATOMS, min_size=1, max_size=3).map(".".join),
       domain=st.lists(_LABELS, min_size=1, max_size=4).map(".".join),
       blanks=st.sampled_from(["", " ", "  ", "\t", " \t "]),
       params=st.sampled_from(["", "SIZE=1000", "SIZE=1000 BODY=8BITMIME ", "NOTIFY=NEVER", "x"]))
@settings(max_examples=2000, deadline=None)
def test_a_plain_path_takes_the_fast_path_with_the_same_result(local, domain, blanks, params):
    path = f"<{local}@{domain}>{blanks}{params}"
    session = SimpleNamespace(local_part_limit=0)
    assert IntakeSMTP._getaddr(session, path) == SMTP._getaddr(session, path)
    assert _SIMPLE_PATH.match(path) is not None   # the fast path answered, not the fallback
