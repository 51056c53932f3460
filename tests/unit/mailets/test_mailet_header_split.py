"""Where the header ends when a message has no empty line after it (issue 16, header-only mail).

Added fields (``Delivered-To``, ``Return-Path``, SetMimeHeader's) must land in the header, never
after body text: the header ends at the first line that is neither a field nor a continuation.
"""

from __future__ import annotations

import pytest

from mailserver.mailets.delivery import LocalDelivery
from mailserver.mailets.headers import AddDeliveredToHeader, SetMimeHeader
from mailserver.mailets.mime import edit_header, header_values, split_fields
from tests.unit.mailets.support import Env, mailet, make_mail

SENT = b"Return-Path: <sender@remote.org>\r\n"


@pytest.mark.parametrize(("header", "fields", "rest"), [
    (b"Subject: hi\r\nFrom: a@b.org\r\n", [b"Subject: hi\r\n", b"From: a@b.org\r\n"], b""),
    (b"Subject: hi\r\n\r\n", [b"Subject: hi\r\n"], b"\r\n"),
    (b"Subject: hi\r\n there\r\nhello world\r\n", [b"Subject: hi\r\n there\r\n"], b"hello world\r\n"),
    (b"Subject : obsolete\r\nbody\r\n", [b"Subject : obsolete\r\n"], b"body\r\n"),
])
def test_the_header_ends_at_the_first_line_that_is_not_a_field(header, fields, rest):
    assert split_fields(header) == (fields, rest)


def test_fields_added_to_a_header_followed_by_body_text_stay_in_the_header():
    edited = edit_header(b"Subject: hi\r\nhello world\r\n", add=(("Delivered-To", "a@b.org"),))
    assert edited == b"Subject: hi\r\nDelivered-To: a@b.org\r\n\r\nhello world\r\n"
    assert header_values(edited, "Delivered-To") == ["a@b.org"]


def test_a_header_without_any_line_break_gets_crlf(env: Env):
    assert edit_header(b"Subject: hi", add=(("X", "1"),)) == b"Subject: hi\r\nX: 1\r\n"


def deliver(env: Env, data: bytes) -> bytes:
    mail = make_mail("alice@example.com", data=data, state="local-delivery")
    mail.content = env.contents.save(mail.content)   # as the spool hands it over: header + body blobs
    mailet(AddDeliveredToHeader, env).service(mail)
    mailet(LocalDelivery, env).service(mail)
    (stored,) = env.inbox("alice@example.com")
    return stored


def test_header_only_mail_gets_delivered_to_at_the_end_of_its_header(env: Env):
    stored = deliver(env, b"Received: from x\r\nSubject: header only\r\n")
    assert stored == SENT + b"Received: from x\r\nSubject: header only\r\nDelivered-To: alice@example.com\r\n"


def test_body_without_the_empty_line_keeps_delivered_to_out_of_the_body(env: Env):
    stored = deliver(env, b"Received: from x\r\nSubject: no blank line\r\nhello world\r\nsecond line\r\n")
    assert stored == (SENT + b"Received: from x\r\nSubject: no blank line\r\nDelivered-To: alice@example.com\r\n"
                      b"\r\nhello world\r\nsecond line\r\n")


def test_set_mime_header_on_stored_content_without_the_empty_line(env: Env):
    mail = make_mail("alice@example.com", data=b"Subject: s\r\nbody text\r\n")
    mail.content = env.contents.save(mail.content)
    mailet(SetMimeHeader, env, name="X-Scanned", value="yes").service(mail)
    raw = env.contents.read(mail.content)
    assert raw == b"Subject: s\r\nX-Scanned: yes\r\n\r\nbody text\r\n"
    assert mail.content.size == len(raw)


LONG_BODY = b"body text\r\n" * 100_000   # past the store's 1 MiB header limit: split at "body text"


def test_set_mime_header_on_a_long_body_without_the_empty_line(env: Env):
    mail = make_mail("alice@example.com", data=b"Subject: s\r\n" + LONG_BODY)
    mail.content = env.contents.save(mail.content)
    assert env.contents.read_header(mail.content) == b"Subject: s\r\n"   # fields only, the body after
    mailet(SetMimeHeader, env, name="X-Scanned", value="yes").service(mail)
    raw = env.contents.read(mail.content)
    assert raw == b"Subject: s\r\nX-Scanned: yes\r\n\r\n" + LONG_BODY
    assert mail.content.size == len(raw)


def test_delivery_of_a_long_body_without_the_empty_line(env: Env):
    stored = deliver(env, b"Subject: long\r\n" + LONG_BODY)
    assert stored == SENT + b"Subject: long\r\nDelivered-To: alice@example.com\r\n\r\n" + LONG_BODY
