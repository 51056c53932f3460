"""FETCH items on raw messages: sections are byte-exact, BODYSTRUCTURE and ENVELOPE as RFC 3501 shows them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mailserver.imap import mime
from mailserver.imap.bodystructure import body_structure
from mailserver.imap.envelope import address_list, envelope
from mailserver.imap.fetch import Content, Section, StreamSlice, parse_request, parse_section, render, section_bytes
from mailserver.imap.parser import Atom, ParseError, tokenize
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import MessageMetadata

INNER = (b"From: carol@example.org\r\nSubject: inner\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n"
         b"inner body\r\n")
MESSAGE = (
    b"Date: Wed, 17 Jul 1996 02:23:25 -0700 (PDT)\r\n"
    b"From: Terry Gray <gray@cac.washington.edu>\r\n"
    b"Subject: =?utf-8?q?caf=C3=A9?= report\r\n"
    b"To: imap@cac.washington.edu, \"Doe, John\" <john@example.com>\r\n"
    b"Cc: undisclosed-recipients:;\r\n"
    b"Message-ID: <B27397-0100000@cac.washington.edu>\r\n"
    b"MIME-Version: 1.0\r\n"
    b"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
    b"preamble\r\n"
    b"--outer\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
    b"caf=C3=A9\r\nsecond line\r\n"
    b"--outer\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n"
    b"--alt\r\nContent-Type: text/plain\r\n\r\nplain\r\n"
    b"--alt\r\nContent-Type: text/html\r\n\r\n<p>html</p>\r\n"
    b"--alt--\r\n"
    b"--outer\r\nContent-Type: message/rfc822\r\n\r\n" + INNER +
    b"--outer\r\nContent-Type: application/pdf; name=r.pdf\r\nContent-Disposition: attachment; filename=r.pdf\r\n"
    b"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n"
    b"--outer--\r\nepilogue\r\n")


def meta(raw: bytes) -> MessageMetadata:
    return MessageMetadata(MailboxId.generate(), MessageId.generate(), 7, 42, Flags.of(SystemFlag.SEEN),
                           MessageId.generate(), datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), None,
                           raw.index(b"\r\n\r\n") + 4, len(raw), "header-blob")


def content(raw: bytes) -> Content:
    m = meta(raw)
    return Content(m, lambda _m: raw[:m.body_start_octet], lambda _m: raw)


def section(spec: str) -> bytes:
    return section_bytes(content(MESSAGE), parse_section(spec))


def test_sections_are_byte_exact_slices():
    assert section("") == MESSAGE
    assert section("HEADER") == MESSAGE[:MESSAGE.index(b"\r\n\r\n") + 4]
    assert section("TEXT") == MESSAGE[MESSAGE.index(b"\r\n\r\n") + 4:]
    assert section("1") == b"caf=C3=A9\r\nsecond line"
    assert section("1.MIME") == b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: " \
                                b"quoted-printable\r\n\r\n"
    assert section("2.1") == b"plain" and section("2.2") == b"<p>html</p>"
    assert section("3") == INNER.rstrip(b"\r\n")
    assert section("3.HEADER") == INNER[:INNER.index(b"\r\n\r\n") + 4]
    assert section("3.TEXT") == b"inner body"
    assert section("3.1") == b"inner body", "part 1 of a non-multipart message is its body"
    assert section("4") == b"JVBERi0xLjQK"
    assert section("9") == b"" and section("2.5") == b""
    assert section("HEADER.FIELDS (subject FROM)") == (
        b"From: Terry Gray <gray@cac.washington.edu>\r\nSubject: =?utf-8?q?caf=C3=A9?= report\r\n\r\n")
    not_fields = section("HEADER.FIELDS.NOT (Date From Subject To Cc Message-ID MIME-Version)")
    assert not_fields == b"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"


def test_a_single_part_message_is_part_one():
    raw = b"Subject: x\r\n\r\nbody\r\n"
    assert section_bytes(content(raw), parse_section("1")) == b"body\r\n"
    assert body_structure(mime.parse(raw)) == \
        b'("TEXT" "PLAIN" ("charset" "us-ascii") NIL NIL "7BIT" 6 1 NIL NIL NIL NIL)'


def test_bodystructure_of_nested_multiparts_attachments_and_messages():
    structure = body_structure(mime.parse(MESSAGE))
    assert structure.startswith(b'(("TEXT" "PLAIN" ("charset" "utf-8") NIL NIL "QUOTED-PRINTABLE" 22 1 NIL NIL NIL NIL)'
                                b'(("TEXT" "PLAIN" ("charset" "us-ascii") NIL NIL "7BIT" 5 0 NIL NIL NIL NIL)'
                                b'("TEXT" "HTML" ("charset" "us-ascii") NIL NIL "7BIT" 11 0 NIL NIL NIL NIL) '
                                b'"ALTERNATIVE" ("boundary" "alt") NIL NIL NIL)')
    assert b'("MESSAGE" "RFC822" NIL NIL NIL "7BIT" %d (NIL "inner" ((NIL NIL "carol" "example.org"))' \
        % (len(INNER) - 2) in structure
    assert b'("TEXT" "PLAIN" ("charset" "us-ascii") NIL NIL "7BIT" 10 0 NIL NIL NIL NIL) 4 NIL' in structure
    assert b'("APPLICATION" "PDF" ("name" "r.pdf") NIL NIL "BASE64" 12 NIL ("attachment" ("filename" "r.pdf")) ' \
           b'NIL NIL)' in structure
    assert structure.endswith(b' "MIXED" ("boundary" "outer") NIL NIL NIL)')
    body = body_structure(mime.parse(MESSAGE), extensible=False)
    assert b"attachment" not in body and body.endswith(b' "MIXED")')


def test_envelope_keeps_raw_values_and_splits_addresses_and_groups():
    fields = mime.parse(MESSAGE).fields
    assert envelope(fields) == (
        b'("Wed, 17 Jul 1996 02:23:25 -0700 (PDT)" "=?utf-8?q?caf=C3=A9?= report" '
        b'(("Terry Gray" NIL "gray" "cac.washington.edu")) (("Terry Gray" NIL "gray" "cac.washington.edu")) '
        b'(("Terry Gray" NIL "gray" "cac.washington.edu")) '
        b'((NIL NIL "imap" "cac.washington.edu")("Doe, John" NIL "john" "example.com")) '
        b'((NIL NIL "undisclosed-recipients" NIL)(NIL NIL NIL NIL)) NIL NIL "<B27397-0100000@cac.washington.edu>")')
    assert address_list(None) == b"NIL"


def test_render_streams_whole_sections_and_loads_only_what_items_need():
    loads = []
    m = meta(MESSAGE)
    c = Content(m, lambda _m: loads.append("header") or MESSAGE[:m.body_start_octet],
                lambda _m: loads.append("full") or MESSAGE)
    request = parse_request(tokenize([b"(UID FLAGS BODY.PEEK[HEADER.FIELDS (Subject)] BODY[]<10.20> RFC822.SIZE)"]))
    pieces = render(m, 3, request, c, recent=True)
    assert loads == ["header"], "a whole-message partial is streamed, not loaded"
    assert pieces[0] == (b"* 3 FETCH (UID 7 FLAGS (\\Seen \\Recent) BODY[HEADER.FIELDS (Subject)] "
                         b"{41}\r\nSubject: =?utf-8?q?caf=C3=A9?= report\r\n\r\n BODY[]<10> {20}\r\n")
    assert pieces[1] == StreamSlice(m, 10, 20)
    assert pieces[2] == b" RFC822.SIZE %d)\r\n" % len(MESSAGE)
    with_structure = parse_request([Atom("FULL")])
    loads.clear()
    assert b"BODY (" in b"".join(p for p in render(m, 1, with_structure, content(MESSAGE), recent=False)
                                 if isinstance(p, bytes))


def test_partials_past_the_end_and_text_sections_stream_from_the_body_start():
    m = meta(MESSAGE)
    pieces = render(m, 1, parse_request(tokenize([b"BODY[TEXT]<5>"])), content(MESSAGE), recent=False)
    assert pieces[1] == StreamSlice(m, m.body_start_octet + 5, len(MESSAGE) - m.body_start_octet - 5)
    beyond = render(m, 1, parse_request(tokenize([b"BODY.PEEK[]<99999.10>"])), content(MESSAGE), recent=False)
    assert beyond == [b"* 1 FETCH (BODY[]<99999> {0}\r\n)\r\n"]
    parts = render(m, 1, parse_request(tokenize([b"(BODYSTRUCTURE BODY[1]<0.3>)"])), content(MESSAGE), recent=False)
    assert parts[0].endswith(b"BODY[1]<0> {3}\r\ncaf)\r\n")


@pytest.mark.parametrize("item", ["BODY[", "BODY[FOO]", "BINARY[1]", "BODY[]<1.0>", "BODY[MIME]", "FLAGZ",
                                  "BODY[HEADER.FIELDS]", "BODY[TEXT (x)]"])
def test_invalid_fetch_items(item):
    with pytest.raises(ParseError):
        parse_request(tokenize([item.encode()]))


def test_macros_and_modifiers():
    assert [a.name for a in parse_request([Atom("FAST")]).attributes] == ["FLAGS", "INTERNALDATE", "RFC822.SIZE"]
    request = parse_request(tokenize([b"(FLAGS) (CHANGEDSINCE 12)"]))
    assert request.changed_since == 12 and [a.name for a in request.attributes] == ["FLAGS", "MODSEQ"]
    assert parse_request([Atom("BODY[TEXT]")]).sets_seen and not parse_request([Atom("BODY.PEEK[TEXT]")]).sets_seen
    assert Section((1, 2), "MIME").spec() == "1.2.MIME"
