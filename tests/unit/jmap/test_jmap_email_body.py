"""RFC 8621 4.1.4's body structure on the bounded MIME tree: which parts are textBody, htmlBody
and attachments, decoded values, and hostile nesting answered without recursion errors."""

from __future__ import annotations

import base64

from mailserver.jmap.methods.email_body import body_value, structure
from tests.support.jmap_world import MIXED


def ids(parts) -> list[str]:
    return [p.part_id for p in parts]


def test_alternative_inside_mixed_splits_text_and_html_and_keeps_the_attachment():
    found = structure(MIXED)
    assert (ids(found.text_body), ids(found.html_body), ids(found.attachments)) == (["1"], ["2"], ["3"])
    assert found.attachments[0].properties("E1") == {
        "partId": "3", "blobId": "E1_3", "size": 9, "name": "q.pdf", "type": "application/pdf", "charset": None,
        "disposition": "attachment", "cid": None, "language": None, "location": None}


def test_a_single_part_message_is_both_text_and_html_body():
    found = structure(b"Subject: x\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>hi</p>")
    assert (ids(found.text_body), ids(found.html_body), found.attachments) == (["1"], ["1"], [])


def test_text_without_an_html_alternative_serves_as_html_body():
    raw = (b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nhello\r\n"
           b"--b\r\nContent-Type: image/png\r\nContent-Disposition: inline\r\n\r\nPNG\r\n--b--\r\n")
    found = structure(raw)
    assert (ids(found.text_body), ids(found.html_body), ids(found.attachments)) == (["1", "2"], ["1", "2"], [])


def test_transfer_encodings_are_undone_and_bad_charsets_reported():
    encoded = base64.b64encode("Grüße".encode()).decode()
    raw = (f"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n{encoded}\r\n"
           ).encode()
    assert body_value(structure(raw).text_body[0], 0) == {"value": "Grüße", "isEncodingProblem": False,
                                                           "isTruncated": False}
    broken = b"Content-Type: text/plain; charset=utf-8\r\n\r\n\xff\xfe ok"
    value = body_value(structure(broken).text_body[0], 0)
    assert value["isEncodingProblem"] is True and value["value"].endswith(" ok")
    assert body_value(structure(raw).text_body[0], 4) == {"value": "Grü", "isEncodingProblem": False,
                                                          "isTruncated": True}   # never half a character


def test_hostile_nesting_is_bounded_not_a_recursion_error():
    depth = 5000
    raw = b"".join(f"Content-Type: multipart/mixed; boundary=b{i}\r\n\r\n--b{i}\r\n".encode() for i in range(depth))
    raw += b"Content-Type: text/plain\r\n\r\ndeep\r\n"
    found = structure(raw)
    assert len(found.text_body) + len(found.attachments) <= 1   # the too-deep container is one opaque part
