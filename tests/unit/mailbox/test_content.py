"""Header/body split and fast-view preview."""

from __future__ import annotations

import io

import pytest

from mailserver.mailbox.content import MalformedMessage, preview, split


def test_split_at_the_first_empty_line_crlf():
    raw = b"Subject: a\r\nFrom: b@c.d\r\n\r\nbody\r\n\r\nmore"
    parts = split(raw)
    assert parts.header == b"Subject: a\r\nFrom: b@c.d\r\n\r\n"
    assert parts.body.read() == b"body\r\n\r\nmore"
    assert parts.body_start_octet == len(parts.header) and parts.size == len(raw)


def test_split_from_a_stream_with_the_separator_across_chunks():
    raw = b"Subject: x\r\n" + b"X-Long: " + b"a" * 70_000 + b"\r\n\r\n" + b"b" * 200_000
    parts = split(io.BytesIO(raw))
    assert parts.body.read() == b"b" * 200_000
    assert parts.size == len(raw)


def test_header_only_message_and_bad_input():
    assert split(b"Subject: only\r\n").body.read() == b""
    with pytest.raises(MalformedMessage, match="empty"):
        split(b"")
    with pytest.raises(MalformedMessage, match="header field"):
        split(b"hello world\r\n\r\nbody")


def test_preview_prefers_text_and_collapses_whitespace():
    raw = (b"Subject: s\r\nContent-Type: multipart/alternative; boundary=B\r\n\r\n--B\r\n"
           b"Content-Type: text/html\r\n\r\n<p>Hi <b>there</b></p>\r\n--B\r\nContent-Type: text/plain\r\n\r\n"
           b"Hi   there\r\n  friend\r\n--B--\r\n")
    assert preview(raw) == ("Hi there friend", False)


def test_preview_from_html_only_and_length_limit():
    raw = b"Content-Type: text/html\r\n\r\n<style>x{}</style><div>" + b"word " * 200 + b"</div>"
    text, attachment = preview(raw)
    assert len(text) == 256 and text.startswith("word word") and not attachment

