"""Issue 16: a message whose body starts without the empty line is split, not refused, when it is
longer than the header limit; a header of fields only past that limit is still refused."""

from __future__ import annotations

import io

import pytest

from mailserver.mailbox.content import MAX_HEADER_BYTES, MalformedMessage, split

BODY_LINE = b"body text, no field here\r\n"


def test_past_the_limit_the_header_ends_at_the_first_line_that_is_not_a_field():
    fields = b"Subject: long\r\nX-Folded: a\r\n continued\r\nX-Obsolete : b\r\n"
    body = BODY_LINE * (MAX_HEADER_BYTES // len(BODY_LINE) + 10)
    parts = split(io.BytesIO(fields + body))
    assert parts.header == fields
    assert parts.body.read() == body
    assert parts.body_start_octet == len(fields) and parts.size == len(fields) + len(body)


def test_under_the_limit_a_message_without_the_empty_line_stays_all_header():
    raw = b"Subject: short\r\n" + BODY_LINE
    parts = split(raw)
    assert parts.header == raw and parts.body.read() == b""


def test_past_the_limit_a_header_of_fields_only_is_still_refused():
    field = b"X-Filler: " + b"f" * 80 + b"\r\n"
    with pytest.raises(MalformedMessage, match="no end of header"):
        split(field * (MAX_HEADER_BYTES // len(field) + 10))
