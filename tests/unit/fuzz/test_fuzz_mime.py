"""Fuzzing every MIME walker of the server with hostile messages and with random octets: the IMAP tree
(``imap/mime.py``), BODYSTRUCTURE and ENVELOPE, FETCH of any section, SEARCH's texts, the store's split and
fast view (``mailbox/content.py``) and the search index document (``search/document.py``).

Each gives a result, never an exception (the store may refuse a message with ``MalformedMessage``, its
one documented refusal), and the results stay what clients and OpenSearch accept: BODYSTRUCTURE and
ENVELOPE parse to RFC 3501's grammar, the tree and the walk stay within their part budget, the index
document is JSON.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st
from imapclient.response_parser import parse_fetch_response
from imapclient.response_types import Envelope

from mailserver.imap import mime
from mailserver.imap.bodystructure import body_structure
from mailserver.imap.envelope import envelope
from mailserver.imap.fetch import Content, StreamSlice, parse_request, render
from mailserver.imap.parser import Atom
from mailserver.imap.search import Candidate
from mailserver.mailbox.content import MAX_PARTS, MalformedMessage, body_text, leaf_parts, preview, split
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import MessageMetadata
from mailserver.search.document import message_document
from tests.unit.fuzz.mime_inputs import messages
from tests.unit.fuzz.profiles import budget
from tests.unit.imap.test_imap_nesting import assert_body
from tests.unit.imap.test_imap_nesting_limits import count_parts

WHEN = datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
_LITERAL = re.compile(rb"\{(\d+)\}\r\n")
sections = st.lists(st.integers(1, 4), max_size=6).map(lambda numbers: ".".join(map(str, numbers)))
section_texts = st.sampled_from(["", "HEADER", "TEXT", "MIME", "HEADER.FIELDS (From Subject X)",
                                 "HEADER.FIELDS.NOT (Content-Type)"])


def fetch_items(numbers: str, text: str) -> list[Atom]:
    spec = ".".join(filter(None, [numbers, text])) if not (text == "MIME" and not numbers) else numbers
    return [Atom(item) for item in ("FLAGS", "UID", "ENVELOPE", "BODYSTRUCTURE", "BODY", "RFC822.SIZE",
                                    "BODY.PEEK[]<3.50>", "BODY[TEXT]", f"BODY.PEEK[{spec}]", f"BODY[{spec}]<1.7>")]


def parsed_fetch(item: bytes, value: bytes) -> object:
    """``* 1 FETCH (item value)`` as imapclient parses it, literals (8-bit header text) handed over as
    imaplib hands them: (the text up to and including ``{n}``, the n octets)."""
    response, pieces, position = b"1 (" + item + b" " + value + b")", [], 0
    while (match := _LITERAL.search(response, position)) is not None:
        end = match.end() + int(match.group(1))
        pieces.append((response[position:match.start()] + b"{%s}" % match.group(1), response[match.end():end]))
        position = end
    return parse_fetch_response([*pieces, response[position:]])[1][item]


def stored(raw: bytes) -> MessageMetadata | None:
    """What the store keeps of ``raw`` (its size and where the body starts), or None when it refuses it."""
    try:
        message = split(raw)
    except MalformedMessage:
        return None
    message.close()
    return MessageMetadata(mailbox_id=MailboxId.generate(), message_id=MessageId.generate(), uid=7, mod_seq=3,
                           flags=Flags(), thread_id=MessageId.generate(), internal_date=WHEN, save_date=WHEN,
                           body_start_octet=message.body_start_octet, size=message.size, header_blob_id="h")


def assert_walked(raw: bytes, numbers: str, text: str) -> None:
    root = mime.parse(raw)
    assert count_parts(root) <= MAX_PARTS
    for extensible in (True, False):
        assert_body(parsed_fetch(b"BODY", body_structure(root, extensible=extensible)))
    assert isinstance(parsed_fetch(b"ENVELOPE", envelope(root.fields)), Envelope)
    assert len(list(leaf_parts(raw))) <= MAX_PARTS
    text_preview, has_attachment = preview(raw)
    assert isinstance(text_preview, str) and isinstance(has_attachment, bool)
    for subtype in ("plain", "html"):
        assert body_text(raw, subtype) is None or isinstance(body_text(raw, subtype), str)
    meta = stored(raw)
    if meta is None:
        return
    json.dumps(message_document(meta, raw, "fuzz@example.com"))
    content = Content(meta, lambda m: raw[:m.body_start_octet], lambda m: raw)
    pieces = render(meta, 1, parse_request([fetch_items(numbers, text)]), content, recent=False)
    assert all(isinstance(piece, bytes | StreamSlice) for piece in pieces)
    candidate = Candidate(meta, 1, content, False, 1, meta.uid)
    assert isinstance(candidate.all_text(), str) and isinstance(candidate.header_text("subject"), list)


@budget(150)
@given(raw=messages(), numbers=sections, text=section_texts)
def test_hostile_messages_give_every_walker_a_result(raw, numbers, text):
    assert_walked(raw, numbers, text)


@budget(300)
@given(raw=st.binary(max_size=400), numbers=sections, text=section_texts)
def test_random_octets_give_every_walker_a_result(raw, numbers, text):
    assert_walked(raw, numbers, text)
