"""SORT and THREAD (RFC 5256): base subjects, sort criteria, the two threading algorithms, and
both commands over a session (raw bytes, then imapclient's ``sort`` and ``thread``)."""

from __future__ import annotations

import time

import pytest
from imapclient import IMAPClient

from mailserver.imap.base_subject import base_subject
from mailserver.imap.parser import ParseError, tokenize
from mailserver.imap.sort import MAX_CRITERIA, parse_criteria
from mailserver.imap.thread import (
    ThreadMessage,
    ThreadTooCostly,
    ordered_subject,
    references_threads,
    render,
)
from tests.unit.imap.conftest import PASSWORD, USER
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login


# -- base subject (RFC 5256 2.1) -------------------------------------------------------------------------
@pytest.mark.parametrize(("subject", "base", "is_reply"), [
    ("Hello", "Hello", False),
    ("Re: Hello", "Hello", True),
    ("RE: re:Fwd: FW: hello", "hello", True),
    ("Re[2]: Hello", "Hello", True),
    ("Re [list]: Hello", "Hello", True),
    ("[list] Re: Hello", "Hello", True),
    ("[PATCH 1/2] Hello", "Hello", False),
    ("[a] [b] Hello", "Hello", False),
    ("[only] [blobs]", "[blobs]", False),
    ("Hello (fwd)", "Hello", True),
    ("Hello (FWD)  (fwd) ", "Hello", True),
    ("[Fwd: Re: Hello]", "Hello", True),
    ("Re: [fwd: [list] Re: Hello (fwd)]", "Hello", True),
    ("  Re:   several\t  spaces  ", "several spaces", True),
    ("Re: ", "", True),
    ("Fwd", "Fwd", False),
    ("Reply: Hello", "Reply: Hello", False),
    ("=?utf-8?q?Re=3A_caf=C3=A9?=", "café", True),
    ("[unclosed Hello", "[unclosed Hello", False),
    (None, "", False),
])
def test_base_subject_follows_rfc_5256_section_2_1(subject, base, is_reply):
    assert base_subject(subject).text == base
    assert base_subject(subject).is_reply is is_reply


def test_the_base_subject_key_folds_ascii_case_only():
    assert base_subject("re: HeLLo").key == base_subject("Hello").key == "HELLO"
    assert base_subject("été").key == "éTé"


@pytest.mark.parametrize("hostile", ["[" * 200_000, "[a]" * 70_000, "Re: " * 50_000 + "x",
                                     "[fwd: " * 35_000 + "]" * 35_000, "re [" * 50_000, " (fwd)" * 35_000])
def test_hostile_subjects_take_linear_time(hostile):
    started = time.perf_counter()
    base_subject(hostile)
    assert time.perf_counter() - started < 2.0   # quadratic scanning of these takes minutes


# -- sort criteria -----------------------------------------------------------------------------------------
def test_sort_criteria_are_read_with_reverse():
    assert parse_criteria(tokenize([b"REVERSE date subject Reverse SIZE"])) == \
        [("DATE", True), ("SUBJECT", False), ("SIZE", True)]


@pytest.mark.parametrize("text", [b"", b"REVERSE", b"REVERSE REVERSE DATE", b"DISPLAYFROM", b"(DATE)", b'"DATE"'])
def test_bad_sort_criteria_are_refused(text):
    with pytest.raises(ParseError):
        parse_criteria(tokenize([text]))


def test_too_many_sort_criteria_are_refused_with_limit():
    with pytest.raises(ParseError, match="LIMIT"):
        parse_criteria(tokenize([b"SIZE " * (MAX_CRITERIA + 1)]))


# -- threading algorithms ----------------------------------------------------------------------------------
def message(number: int, sent: float, subject: str, message_id: str | None = None,
            references: list[str] | None = None) -> ThreadMessage:
    return ThreadMessage(number, number, sent, base_subject(subject), message_id, references or [])


def test_ordered_subject_groups_by_base_subject_and_orders_by_first_sent_date():
    messages = [message(1, 10, "b"), message(2, 5, "Re: a"), message(3, 20, "a"),
                message(4, 30, "c"), message(5, 25, "re: B"), message(6, 1, "[x] a")]
    assert render(ordered_subject(messages)) == b"* THREAD (6 (2)(3))(1 5)(4)\r\n"


def test_references_builds_the_tree_and_writes_single_children_as_a_chain():
    messages = [message(1, 1, "hello", "a@x"), message(2, 2, "Re: hello", "b@x", ["a@x"]),
                message(3, 3, "Re: hello", "c@x", ["a@x", "b@x"]), message(4, 4, "Re: hello", "d@x", ["a@x"]),
                message(5, 5, "other", "e@x")]
    assert render(references_threads(messages)) == b"* THREAD (1 (2 3)(4))(5)\r\n"


def test_references_answers_rfc_5256s_example_shape():
    chain = ["a@x", "b@x"]
    messages = [message(2, 1, "alone", "z@x"), message(3, 2, "topic", "a@x"),
                message(6, 3, "Re: topic", "b@x", ["a@x"]), message(4, 4, "Re: topic", "c@x", [*chain]),
                message(23, 5, "Re: topic", "f@x", [*chain, "c@x"]), message(44, 6, "Re: topic", "d@x", [*chain]),
                message(7, 7, "Re: topic", "e@x", [*chain, "d@x"]),
                message(96, 8, "Re: topic", "g@x", [*chain, "d@x", "e@x"])]
    assert render(references_threads(messages)) == b"* THREAD (2)(3 6 (4 23)(44 7 96))\r\n"


def test_references_siblings_of_a_missing_parent_are_kept_under_a_dummy():
    messages = [message(1, 1, "Re: lost", "b@x", ["gone@x"]), message(2, 2, "Re: lost too", "c@x", ["gone@x"])]
    assert render(references_threads(messages)) == b"* THREAD ((1)(2))\r\n"


def test_references_a_dummy_with_one_child_is_replaced_by_it():
    messages = [message(1, 1, "Re: a", "b@x", ["gone@x"]), message(2, 2, "Re: a", "c@x", ["gone@x", "b@x"])]
    assert render(references_threads(messages)) == b"* THREAD (1 2)\r\n"


def test_references_merges_threads_by_subject_a_reply_going_under_the_original():
    messages = [message(1, 1, "Re: topic", "r@x", ["unknown@x", "other@x"]), message(2, 2, "topic", "t@x"),
                message(3, 3, "something", "s@x")]
    # 1's parent chain is two dummies with one child each: pruned to 1 at the top, then put under 2.
    assert render(references_threads(messages)) == b"* THREAD (2 1)(3)\r\n"


def test_references_two_originals_with_one_subject_go_under_a_dummy():
    messages = [message(1, 1, "topic", "a@x"), message(2, 2, "topic", "b@x")]
    assert render(references_threads(messages)) == b"* THREAD ((1)(2))\r\n"


def test_references_uses_in_reply_to_dates_order_siblings_and_ignores_loops_and_duplicates():
    messages = [message(1, 50, "a", "a@x", ["b@x"]), message(2, 40, "Re: a", "b@x", ["a@x"]),
                message(3, 30, "dup", "a@x"), message(4, 20, "Re: a", "d@x", ["a@x"]),
                message(5, 60, "Re: a", "e@x", ["a@x"]), message(6, 10, "", None)]
    # 1 and 2 reference each other: 2's own link wins (1 is already 2's child), 1 under 2 would loop.
    # 3 duplicates 1's id: a thread of its own. 6 has no subject and no id.
    assert render(references_threads(messages)) == b"* THREAD (6)(3)(2 1 (4)(5))\r\n"


def test_a_reply_chain_100000_deep_threads_and_renders_without_recursion():
    depth, subject = 100_000, base_subject("deep")
    messages = [ThreadMessage(n, n, n, subject, f"m{n}@x", [f"m{n - 1}@x"] if n > 1 else [])
                for n in range(depth, 0, -1)]   # the deepest first: each message arrives before its parent
    line = render(references_threads(messages))
    assert line == b"* THREAD (" + b" ".join(b"%d" % n for n in range(1, depth + 1)) + b")\r\n"


def test_a_child_moved_back_under_the_same_parent_is_listed_once():
    # 2's chain puts 3 under 1; then 3 arrives naming 1 as its own parent: it leaves 1 and comes back.
    messages = [message(1, 1, "t", "a@x"), message(2, 2, "t", "b@x", ["a@x", "c@x"]),
                message(3, 3, "t", "c@x", ["a@x"])]
    assert render(references_threads(messages)) == b"* THREAD (1 3 2)\r\n"


def test_a_mailbox_crafted_to_make_the_loop_checks_quadratic_is_refused():
    # A chain 3,000 deep, then 3,000 messages that already have a child and each name the chain's
    # end as parent: every loop check walks the whole chain (9 million steps for 9,000 messages).
    depth = width = 3000
    subject = base_subject("x")
    chain = [ThreadMessage(n, n, n, subject, f"c{n}@x", [f"c{n - 1}@x"] if n > 1 else [])
             for n in range(1, depth + 1)]
    children = [ThreadMessage(depth + n, depth + n, 0, subject, f"k{n}@x", [f"p{n}@x"]) for n in range(width)]
    parents = [ThreadMessage(depth + width + n, depth + width + n, 0, subject, f"p{n}@x", [f"c{depth}@x"])
               for n in range(width)]
    started = time.monotonic()
    with pytest.raises(ThreadTooCostly):
        references_threads(chain + children + parents)
    assert time.monotonic() - started < 10


# -- over a session --------------------------------------------------------------------------------------
MESSAGES = [
    # (internal date, header), appended in this order: sequence numbers 1 to 5
    ("01-Jan-2024 10:00:00 +0000", "From: Zed <zed@x.test>\r\nTo: amy@x.test\r\nSubject: Re: budget\r\n"
     "Date: Tue, 02 Jan 2024 10:00:00 +0000\r\nMessage-ID: <2@x>\r\nIn-Reply-To: <1@x>\r\n"),
    ("02-Jan-2024 10:00:00 +0000", "From: bob@x.test\r\nTo: Cat <cat@x.test>\r\nCc: dan@x.test\r\n"
     "Subject: budget\r\nDate: Mon, 01 Jan 2024 23:00:00 -0500\r\nMessage-ID: <1@x>\r\n"),
    ("03-Jan-2024 10:00:00 +0000", "From: \"Al\" <AL@x.test>\r\nSubject: [team] lunch\r\nDate: nonsense\r\n"
     "Message-ID: <3@x>\r\n"),
    ("31-Dec-2023 10:00:00 +0000", "From: carl@x.test\r\nSubject: Fwd: Lunch\r\n"
     "Date: Wed, 03 Jan 2024 10:00:00 +0100\r\nMessage-ID: <4@x>\r\n"),
    ("04-Jan-2024 10:00:00 +0000", "Subject: Re: Re: budget\r\nDate: Thu, 04 Jan 2024 10:00:00 +0000\r\n"
     "Message-ID: <5@x>\r\nReferences: <1@x> <2@x>\r\n" + "X-Pad: " + "p" * 100 + "\r\n"),
]


def fill(raw: RawImap) -> None:
    login(raw)
    for date, header in MESSAGES:
        body = (header + "\r\nbody\r\n").encode()
        raw.send(b'a APPEND INBOX "' + date.encode() + b'" {%d+}\r\n' % len(body) + body + b"\r\n")
        assert raw.until_tagged(b"a")[-1].startswith(b"a OK")
    assert raw.command(b"s", b"SELECT INBOX")[-1].startswith(b"s OK")
    raw.command(b"u", b"STORE 5 +FLAGS (\\Flagged)")


SORTS = [
    (b"(ARRIVAL)", b"4 1 2 3 5"),
    (b"(REVERSE ARRIVAL)", b"5 3 2 1 4"),
    (b"(DATE)", b"2 1 4 3 5"),         # 2 is 04:00 UTC on Jan 2; 3's Date is unreadable: its INTERNALDATE
    (b"(FROM)", b"5 3 2 4 1"),         # "" < AL < bob < carl < zed (case folded)
    (b"(TO SUBJECT)", b"5 3 4 1 2"),   # no To ("") first, by subject (lunch = Lunch: by number); amy, cat
    (b"(CC ARRIVAL)", b"4 1 3 5 2"),
    (b"(SUBJECT REVERSE DATE)", b"5 1 2 3 4"),
    (b"(SIZE)", b"3 4 2 1 5"),
]


def test_sort_and_thread_over_a_session(world):
    raw = RawImap(world.port)
    assert b" SORT THREAD=ORDEREDSUBJECT THREAD=REFERENCES" in raw.command(b"c", b"CAPABILITY")[0]
    fill(raw)
    for criteria, expected in SORTS:
        assert raw.command(b"t", b"SORT " + criteria + b" UTF-8 ALL") == \
            [b"* SORT " + expected + b"\r\n", b"t OK SORT completed\r\n"], criteria
    assert raw.command(b"t", b"UID SORT (REVERSE SIZE) US-ASCII NOT FLAGGED") == \
        [b"* SORT 1 2 4 3\r\n", b"t OK SORT completed\r\n"]
    assert raw.command(b"t", b"SORT (DATE) UTF-8 SUBJECT nothing") == [b"* SORT\r\n", b"t OK SORT completed\r\n"]
    assert raw.command(b"t", b"SORT (DATE) KOI8-R ALL")[-1].startswith(b"t NO [BADCHARSET")
    assert raw.command(b"t", b"SORT DATE UTF-8 ALL")[-1].startswith(b"t BAD")
    assert raw.command(b"t", b"THREAD REFERENCES UTF-8 ALL") == \
        [b"* THREAD (2 1 5)(3 4)\r\n", b"t OK THREAD completed\r\n"]
    assert raw.command(b"t", b"UID THREAD ORDEREDSUBJECT UTF-8 ALL") == \
        [b"* THREAD (2 (1)(5))(4 3)\r\n", b"t OK THREAD completed\r\n"]
    assert raw.command(b"t", b"THREAD BYDATE UTF-8 ALL")[-1].startswith(b"t BAD")
    assert raw.command(b"t", b"SORT (DATE)")[-1].startswith(b"t BAD")
    assert raw.command(b"t", b"SORT (DATE) UTF-8" + b" ALL" * 1001)[-1].startswith(b"t BAD [LIMIT]")
    raw.command(b"d", b"STORE 1 +FLAGS.SILENT (\\Deleted)")
    raw.command(b"x", b"EXPUNGE")
    assert raw.command(b"t", b"SORT (ARRIVAL) UTF-8 ALL")[0] == b"* SORT 3 1 2 4\r\n"
    assert raw.command(b"t", b"UID SORT (ARRIVAL) UTF-8 ALL")[0] == b"* SORT 4 2 3 5\r\n"
    assert raw.command(b"t", b"UID THREAD REFERENCES UTF-8 ALL")[0] == b"* THREAD (2 5)(3 4)\r\n"


def test_sort_reads_headers_only_for_header_criteria_and_once_per_message(world):
    raw = RawImap(world.port)
    fill(raw)
    headers = world.thread.server.headers
    reads = headers.hits + headers.misses
    raw.command(b"t", b"SORT (REVERSE SIZE ARRIVAL) UTF-8 ALL")
    assert headers.hits + headers.misses == reads
    raw.command(b"t", b"SORT (SUBJECT FROM DATE) UTF-8 FROM x")   # the search and three criteria: one read each
    assert headers.hits + headers.misses == reads + len(MESSAGES)


def test_a_modseq_search_key_enables_condstore_and_sort_tells_the_highest_modseq(world):
    raw = RawImap(world.port)
    fill(raw)
    reply = raw.command(b"t", b"SORT (REVERSE ARRIVAL) UTF-8 MODSEQ 1 NOT FLAGGED")
    assert reply[0].startswith(b"* OK [HIGHESTMODSEQ ")
    highest = raw.command(b"s", b"SEARCH MODSEQ 1 NOT FLAGGED")[0].split(b"(")[1]   # b"MODSEQ n)\r\n"
    assert reply[1] == b"* SORT 3 2 1 4 (" + highest
    assert raw.command(b"t", b"SORT (ARRIVAL) UTF-8 MODSEQ 100") == [b"* SORT\r\n", b"t OK SORT completed\r\n"]


def test_imapclient_sorts_and_threads(world):
    raw = RawImap(world.port)
    fill(raw)
    with IMAPClient("127.0.0.1", port=world.port, ssl=False, timeout=10) as client:
        client.login(USER, PASSWORD)
        client.select_folder("INBOX", readonly=True)
        assert client.sort(["REVERSE DATE"]) == [5, 3, 4, 1, 2]   # uids
        assert client.sort("SUBJECT", ["FROM", "bob"]) == [2]
        assert client.thread() == ((2, 1, 5), (3, 4))   # 3 is the original of 4, a forward
        assert client.thread("ORDEREDSUBJECT", ["NOT", "FLAGGED"]) == ((2, 1), (4, 3))
