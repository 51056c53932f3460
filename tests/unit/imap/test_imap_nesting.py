"""Deep input over IMAP: a message nested thousands of MIME levels and commands nested thousands of
levels get an answer (searched on what can be parsed, a valid BODYSTRUCTURE, a tagged BAD [LIMIT]),
and the session and the other messages of the mailbox are unaffected."""

from __future__ import annotations

import imaplib
import re
from collections.abc import Iterator

import pytest
from imapclient.response_parser import parse_fetch_response

from tests.unit.imap.conftest import World, make_world
from tests.unit.imap.raw_client import RawImap
from tests.unit.imap.test_imap_protocol import login

LEVELS = 5000
NORMAL = b"From: b@example.com\r\nSubject: normal\r\n\r\nthe needle is here\r\n"


def nested_multiparts(levels: int) -> bytes:
    """``levels`` multiparts, each holding the next; the text at the bottom."""
    out = bytearray(b"From: a@example.com\r\nSubject: deep\r\n")
    for i in range(levels):
        out += b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i)
    out += b"Content-Type: text/plain\r\n\r\nneedle at the bottom\r\n"
    for i in reversed(range(levels)):
        out += b"--b%d--\r\n" % i
    return bytes(out)


def nested_messages(levels: int) -> bytes:
    """``levels`` attached messages (message/rfc822), each holding the next; the text at the bottom."""
    return (b"From: a@example.com\r\nSubject: deep\r\n" + b"Content-Type: message/rfc822\r\n\r\n" * levels
            + b"Content-Type: text/plain\r\n\r\nneedle at the bottom\r\n")


@pytest.fixture
def world() -> Iterator[World]:
    w = make_world(max_append_size=4 * 1024 * 1024)
    try:
        yield w
    finally:
        w.thread.stop()


def selected(world: World, *messages: bytes) -> imaplib.IMAP4:
    client = world.client()
    for message in messages:
        assert client.append("INBOX", "", None, message)[0] == "OK"
    assert client.select("INBOX")[0] == "OK"
    return client


@pytest.mark.parametrize("deep", [nested_multiparts(LEVELS), nested_messages(LEVELS)],
                         ids=["multiparts", "attached-messages"])
@pytest.mark.parametrize("key", ["BODY", "TEXT"])
def test_search_over_a_mailbox_holding_a_5000_level_message_finds_the_normal_one(world, deep, key):
    client = selected(world, deep, NORMAL)
    status, data = client.uid("SEARCH", key, "needle")
    assert status == "OK", data
    assert b"2" in data[0].split()
    status, data = client.search(None, key, "nowhere")   # the deep message fails no search
    assert (status, data) == ("OK", [b""])


def assert_body(body: object) -> None:
    """``body`` (as imapclient parses it) follows RFC 3501's ``body`` grammar, at every level."""
    stack = [body]
    while stack:
        part = stack.pop()
        assert isinstance(part, tuple) and part, part
        if isinstance(part[0], list):   # body-type-mpart, as imapclient gives the outermost one
            part = (*part[0], *part[1:])
        if isinstance(part[0], tuple):   # body-type-mpart: 1*body SP media-subtype
            children = 0
            while isinstance(part[children], tuple):
                children += 1
            assert isinstance(part[children], bytes), part
            stack.extend(part[:children])
            continue
        kind, subtype, size = part[0].upper(), part[1].upper(), part[6]
        assert isinstance(size, int), part
        if (kind, subtype) == (b"MESSAGE", b"RFC822"):   # envelope SP body SP body-fld-lines
            envelope, inner, lines = part[7], part[8], part[9]
            assert isinstance(envelope, tuple) and len(envelope) == 10, part
            assert isinstance(lines, int), part
            stack.append(inner)
        elif kind == b"TEXT":
            assert isinstance(part[7], int), part


def test_fetch_bodystructure_of_5000_level_messages_is_a_valid_answer(world):
    client = selected(world, nested_messages(LEVELS), nested_multiparts(LEVELS), NORMAL)
    for item in ("BODYSTRUCTURE", "BODY"):
        status, data = client.fetch("1:3", f"({item})")
        assert status == "OK", data
        structures = {seq: values[item.encode()] for seq, values in parse_fetch_response(data).items()}
        assert sorted(structures) == [1, 2, 3]
        for structure in structures.values():
            assert_body(structure)
        assert structures[3][:2] == (b"TEXT", b"PLAIN")   # the other message is described as ever


def test_a_section_of_a_deep_message_is_fetched_down_to_the_depth_limit(world):
    client = selected(world, nested_messages(LEVELS))
    section = ".".join(["1"] * 50)
    status, data = client.fetch("1", f"(BODY.PEEK[{section}.HEADER])")
    assert status == "OK"
    assert data[0][1] == b"Content-Type: message/rfc822\r\n\r\n"


@pytest.mark.parametrize("criteria", [
    b"(" * 5000 + b"ALL" + b")" * 5000,
    b"OR ALL " * 4000 + b"ALL",
    b"NOT " * 5000 + b"ALL",
    b"OR " * 4000 + b"ALL " * 4001,
], ids=["parentheses", "right-nested-or", "not", "left-nested-or"])
def test_a_search_nested_thousands_of_levels_gets_bad_limit_and_the_session_goes_on(world, criteria):
    selected(world, NORMAL).logout()
    raw = RawImap(world.port)
    login(raw)
    raw.command(b"s", b"SELECT INBOX")
    answer = raw.command(b"a", b"SEARCH " + criteria)[-1]
    assert re.match(rb"a BAD \[LIMIT\] .*nested deeper than 100 levels", answer), answer
    assert raw.command(b"b", b"SEARCH (OR (NOT DELETED) ALL)")[-2:] == [b"* SEARCH 1\r\n", b"b OK SEARCH completed\r\n"]
    assert raw.command(b"c", b"NOOP")[-1] == b"c OK NOOP completed\r\n"
