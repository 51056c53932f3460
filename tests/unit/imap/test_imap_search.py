"""SEARCH criteria evaluated over the memory mailbox layer (metadata, headers, decoded content)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailserver.blob.memory import MemoryBlobStore
from mailserver.imap.fetch import Content
from mailserver.imap.parser import ParseError, tokenize
from mailserver.imap.search import BadCharset, Candidate, parse_query
from mailserver.mailbox.wiring import memory_context
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.mailbox import MailboxPath

BASE64_BODY = (b"From: Dana <dana@example.com>\r\nTo: team@example.com\r\nCc: boss@example.com\r\n"
               b"Subject: =?iso-8859-1?q?R=E9union?=\r\nDate: Tue, 03 Feb 2026 23:30:00 -0500\r\nX-Prio: high\r\n"
               b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n"
               b"TGEgcsOpdW5pb24gZXN0IGRlbWFpbi4=\r\n")          # "La réunion est demain."
PLAIN = b"From: eve@example.org\r\nSubject: hello\r\n\r\nsee you tomorrow\r\n"


@pytest.fixture
def mailbox():
    ctx = memory_context(MemoryBlobStore())
    path = MailboxPath.inbox("search@example.com")
    ctx.manager.create_mailbox(path)
    ctx.manager.append(path, BASE64_BODY, internal_date=datetime(2026, 2, 4, 10, 0, tzinfo=UTC),
                       flags=Flags.of(SystemFlag.SEEN, user=["$Work"]))
    ctx.manager.append(path, PLAIN, internal_date=datetime(2026, 3, 1, 10, 0, tzinfo=UTC),
                       flags=Flags.of(SystemFlag.FLAGGED, SystemFlag.DELETED))
    ctx.manager.append(path, PLAIN.replace(b"hello", b"again"), internal_date=datetime(2026, 3, 2, tzinfo=UTC))
    return ctx, path


def search(mailbox, text: str, *, recent: frozenset[int] = frozenset(), loads: list | None = None) -> list[int]:
    ctx, path = mailbox
    query = parse_query(tokenize([text.encode()]))
    messages = ctx.manager.get_messages(path)
    found = []
    for seq, meta in enumerate(messages, start=1):
        def read_header(m, _loads=loads):
            if _loads is not None:
                _loads.append("header")
            return ctx.manager.read_header(m)

        def read_full(m, _loads=loads):
            if _loads is not None:
                _loads.append("full")
            return ctx.manager.read_message(m.message_id)

        candidate = Candidate(meta, seq, Content(meta, read_header, read_full), meta.uid in recent, len(messages),
                              messages[-1].uid)
        if query.predicate(candidate):
            found.append(meta.uid)
    return found


@pytest.mark.parametrize("criteria, expected", [
    ("ALL", [1, 2, 3]),
    ("SEEN", [1]), ("UNSEEN", [2, 3]), ("FLAGGED DELETED", [2]), ("UNDELETED", [1, 3]),
    ("KEYWORD $Work", [1]), ("UNKEYWORD $Work", [2, 3]), ("KEYWORD \\Seen", [1]),
    ("OR SEEN FLAGGED", [1, 2]), ("NOT SEEN", [2, 3]), ("(SEEN) OR 1 3", [1]), ("NOT (OR SEEN FLAGGED)", [3]),
    ("1:2", [1, 2]), ("2:*", [2, 3]), ("UID 3", [3]), ("UID 2:*", [2, 3]),
    ("LARGER 100", [1]), ("SMALLER 100", [2, 3]),
    ("SINCE 1-Mar-2026", [2, 3]), ("BEFORE 1-Mar-2026", [1]), ("ON 2-Mar-2026", [3]),
    ("SENTON 3-Feb-2026", [1]), ("SENTBEFORE 4-Feb-2026", [1]), ("SENTSINCE 4-Feb-2026", []),
    ("FROM dana", [1]), ("FROM EXAMPLE.ORG", [2, 3]), ("TO team", [1]), ("CC boss", [1]), ("BCC x", []),
    ('SUBJECT "r\u00e9union"', [1]), ("HEADER X-Prio HIGH", [1]), ('HEADER X-Prio ""', [1]),
    ('BODY "r\u00e9union est"', [1]), ("BODY tomorrow", [2, 3]), ("TEXT again", [3]), ("TEXT dana", [1]),
    ("CHARSET UTF-8 SUBJECT hello", [2]),
])
def test_criteria(mailbox, criteria, expected):
    assert search(mailbox, criteria) == expected


def test_recent_new_and_old_come_from_the_session(mailbox):
    assert search(mailbox, "RECENT", recent=frozenset({3})) == [3]
    assert search(mailbox, "NEW", recent=frozenset({1, 3})) == [3]
    assert search(mailbox, "OLD", recent=frozenset({3})) == [1, 2]


def test_metadata_criteria_load_no_content_and_header_criteria_only_headers(mailbox):
    loads: list[str] = []
    search(mailbox, "UNSEEN UID 1:* LARGER 10 SINCE 1-Jan-2020", loads=loads)
    assert loads == []
    search(mailbox, "SUBJECT hello", loads=loads)
    assert set(loads) == {"header"}
    loads.clear()
    search(mailbox, "SEEN BODY demain", loads=loads)
    assert loads.count("full") == 1, "AND stops at the first false operand: only the seen message is read"


@pytest.mark.parametrize("criteria", ["", "FROBNICATE", "FROM", "SINCE yesterday", "LARGER big", "OR SEEN", "()",
                                      "UID x"])
def test_invalid_criteria(criteria):
    with pytest.raises(ParseError):
        parse_query(tokenize([criteria.encode()]))


def test_unknown_charset():
    with pytest.raises(BadCharset):
        parse_query(tokenize([b"CHARSET KOI8-R ALL"]))
