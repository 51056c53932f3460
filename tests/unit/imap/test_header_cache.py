"""FETCH and SEARCH read a header blob once: the IMAP server keeps the headers it read by blob id."""

from __future__ import annotations

from dataclasses import replace

from mailserver.imap.header_cache import HeaderCache
from mailserver.model.ids import MailboxId
from tests.support.maintenance import metadata


def test_a_header_is_read_from_the_store_once_per_blob_id():
    reads: list[str] = []

    def from_store(message):
        reads.append(message.header_blob_id)
        return b"Subject: " + message.header_blob_id.encode() + b"\r\n\r\n"

    read = HeaderCache().reader(from_store)
    first = replace(metadata(MailboxId.generate(), 1), header_blob_id="blob-a")
    copy = replace(first, uid=2)   # a copy shares the blob
    other = replace(first, uid=3, header_blob_id="blob-b")

    assert read(first) == b"Subject: blob-a\r\n\r\n"
    assert read(copy) == b"Subject: blob-a\r\n\r\n"
    assert read(other) == b"Subject: blob-b\r\n\r\n"
    assert reads == ["blob-a", "blob-b"]


def test_the_least_recently_read_headers_leave_first_when_full():
    reads: list[str] = []

    def from_store(message):
        reads.append(message.header_blob_id)
        return b"x" * 40

    read = HeaderCache(max_bytes=100).reader(from_store)
    a, b, c = (replace(metadata(MailboxId.generate(), 1), header_blob_id=name) for name in "abc")
    read(a), read(b), read(a), read(c)   # 120 bytes: b, the least recently read, leaves

    read(a), read(b)

    assert reads == ["a", "b", "c", "b"]


def test_an_envelope_is_rendered_once_per_header_blob_id():
    renders: list[str] = []
    cache = HeaderCache()
    first = replace(metadata(MailboxId.generate(), 1), header_blob_id="blob-a")
    copy = replace(first, uid=2)
    other = replace(first, uid=3, header_blob_id="blob-b")

    def render(message):
        def run() -> bytes:
            renders.append(message.header_blob_id)
            return b'(NIL "' + message.header_blob_id.encode() + b'")'
        return run

    assert cache.envelope(first, render(first)) == b'(NIL "blob-a")'
    assert cache.envelope(copy, render(copy)) == b'(NIL "blob-a")'
    assert cache.envelope(other, render(other)) == b'(NIL "blob-b")'
    assert renders == ["blob-a", "blob-b"]
