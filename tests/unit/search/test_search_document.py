"""Documents as James's ``IndexableMessage`` writes them, from hostile MIME too (no server)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import EventMessageMetadata, MessageMetadata
from mailserver.search import document as doc
from mailserver.search.config import DocumentOptions
from mailserver.search.document import base_subject, document_id, flags_document, flags_of, message_document
from mailserver.search.mapping import MAILBOX_MAPPING, index_body

INTERNAL = datetime(2024, 5, 2, 10, 20, 30, 123000, tzinfo=UTC)


def metadata(flags: Flags = Flags(), size: int = 1234) -> MessageMetadata:  # noqa: B008 - frozen value
    return MessageMetadata(mailbox_id=MailboxId.generate(), message_id=MessageId.generate(), uid=42, mod_seq=7,
                           flags=flags, thread_id=MessageId.generate(), internal_date=INTERNAL, save_date=INTERNAL,
                           body_start_octet=0, size=size, header_blob_id="h")


def build(raw: bytes, **kw: Any) -> dict[str, Any]:
    return message_document(metadata(), raw, "alice@example.com", **kw)


def assert_in_mapping(document: dict[str, Any], properties: dict[str, Any], where: str = "") -> None:
    """``dynamic: strict``: OpenSearch refuses a document with a field the mapping lacks."""
    for key, value in document.items():
        assert key in properties, f"{where}{key} is not in James's mapping"
        sub = properties[key].get("properties")
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                assert sub is not None, f"{where}{key} is an object in the document only"
                assert_in_mapping(item, sub, f"{where}{key}.")


MULTIPART = (
    b"From: =?ISO-8859-1?Q?Andr=E9?= Pirard <PIRARD@vm1.ulg.ac.be>\r\n"
    b"To: alice@example.com, \"Smith, John\" <john@example.com>\r\n"
    b"Cc: undisclosed-recipients:;\r\n"
    b"Bcc: <hidden@example.com>\r\n"
    b"Subject: Re: [PATCH] =?utf-8?b?w6l0w6k=?=\r\n  folded\r\n"
    b"Date: Thu, 02 May 2024 12:00:00 +0200\r\n"
    b"Message-ID: <id-1@example.com>\r\n"
    b"X-Custom: =?utf-8?q?caf=C3=A9?=\r\n"
    b"Content-Type: multipart/mixed; boundary=\"outer\"\r\n\r\n"
    b"--outer\r\nContent-Type: multipart/alternative; boundary=\"alt\"\r\n\r\n"
    b"--alt\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n> quoted line\r\nplain body words\r\n"
    b"--alt\r\nContent-Type: text/html\r\n\r\n<p>html body</p>\r\n--alt--\r\n"
    b"--outer\r\nContent-Type: application/pdf\r\n"
    b"Content-Disposition: attachment; filename*=utf-8''r%C3%A9sum%C3%A9.pdf\r\n\r\nJVBERi0=\r\n"
    b"--outer\r\nContent-Type: image/png\r\nContent-ID: <logo>\r\nContent-Disposition: inline; filename=logo.png\r\n"
    b"\r\niVBORw0=\r\n"
    b"--outer\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=notes\r\n\r\nattached notes\r\n"
    b"--outer--\r\n")


def test_every_field_is_one_of_james_mapping():
    document = build(MULTIPART)
    assert_in_mapping(document, MAILBOX_MAPPING["properties"])
    assert set(document) == set(MAILBOX_MAPPING["properties"])   # the user too (OPENSEARCH_INDEX_USER)


def test_identity_metadata_and_flags():
    meta = metadata(Flags.of(SystemFlag.SEEN, SystemFlag.DRAFT, user=["$Label"]), size=999)
    document = message_document(meta, MULTIPART, "alice@example.com")
    assert document_id(meta.mailbox_id, meta.uid) == f"{meta.mailbox_id}:42"
    assert doc.routing_key(meta.mailbox_id) == str(meta.mailbox_id)
    assert (document["mailboxId"], document["uid"], document["modSeq"], document["size"]) == \
           (str(meta.mailbox_id), 42, 7, 999)
    assert (document["messageId"], document["threadId"]) == (str(meta.message_id), str(meta.thread_id))
    assert (document["isUnread"], document["isDraft"], document["isAnswered"], document["isDeleted"],
            document["isFlagged"], document["isRecent"], document["userFlags"]) == \
           (False, True, False, False, False, False, ["$Label"])
    assert document["date"] == document["saveDate"] == "2024-05-02T10:20:30+0000"   # second resolution, UTC
    assert document["user"] == "alice@example.com"
    assert flags_of(document) == meta.flags


def test_headers_and_addresses():
    document = build(MULTIPART)
    headers = {h["name"]: h["value"] for h in document["headers"]}
    assert headers["subject"] == "Re: [PATCH] été  folded"   # unfolded (white space kept), words decoded
    assert headers["x-custom"] == "café"
    assert document["from"] == [{"name": "André Pirard", "address": "PIRARD@vm1.ulg.ac.be", "domain": "vm1.ulg.ac.be"}]
    assert document["to"] == [{"name": None, "address": "alice@example.com", "domain": "example.com"},
                              {"name": "Smith, John", "address": "john@example.com", "domain": "example.com"}]
    assert document["cc"] == []
    assert document["bcc"] == [{"name": None, "address": "hidden@example.com", "domain": "example.com"}]
    assert document["sentDate"] == "2024-05-02T10:00:00+0000"
    assert document["mimeMessageID"] == "<id-1@example.com>"
    assert (document["mediaType"], document["subtype"]) == ("multipart", "mixed")


def test_subject_holds_base_subject_and_qualifiers():
    assert build(MULTIPART)["subject"] == ["été folded", "PATCH"]
    raw = b"Subject: [list.example.org] news\r\nSubject: Fwd: other\r\n\r\nbody\r\n"
    assert build(raw)["subject"] == ["news", "list.example.org", "list", "example.org", "example", "other"]


@pytest.mark.parametrize(("subject", "base"), [
    ("Re: test", "test"), ("RE:  Re: test", "test"), ("Fwd: test (fwd)", "test"), ("[fwd: test]", "test"),
    ("Fw: [list] Re: test", "test"), ("[PATCH] fix", "fix"), ("[only]", "[only]"), ("  plain  words ", "plain words"),
    ("Rex: not a reply", "Rex: not a reply"),
])
def test_base_subject_rfc5256(subject, base):
    assert base_subject(subject) == base


def test_bodies_and_attachments():
    document = build(MULTIPART)
    assert document["textBody"] == " quoted line\r\nplain body words"   # '>' at line starts removed
    assert document["htmlBody"] is None   # James: only when there is no text/plain part
    assert document["hasAttachment"] is True
    names = [(a["fileName"], a["fileExtension"], a["contentDisposition"], a["mediaType"], a["subtype"])
             for a in document["attachments"]]
    assert names == [("résumé.pdf", "pdf", "attachment", "application", "pdf"),
                     ("logo.png", "png", "inline", "image", "png"),
                     ("notes", "", "attachment", "text", "plain")]
    assert document["attachments"][2]["textContent"].strip() == "attached notes"
    assert document["attachments"][0]["textContent"] is None


def test_html_only_message_and_inline_image_with_content_id_is_no_attachment():
    raw = (b"Content-Type: multipart/related; boundary=r\r\n\r\n--r\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
           b"<html><style>p{}</style><p>Hello &amp; welcome</p></html>\r\n--r\r\nContent-Type: image/png\r\n"
           b"Content-ID: <img1>\r\nContent-Disposition: inline\r\n\r\nAAAA\r\n--r--\r\n")
    document = build(raw)
    assert document["textBody"] is None
    assert " ".join(document["htmlBody"].split()) == "Hello & welcome"
    assert document["hasAttachment"] is False and len(document["attachments"]) == 1


def test_a_single_part_message_is_no_attachment_of_itself():
    raw = b"Content-Type: text/plain\r\nContent-Disposition: attachment; filename=a.txt\r\n\r\nhello\r\n"
    document = build(raw)
    assert document["attachments"] == [] and document["hasAttachment"] is False
    assert document["textBody"].strip() == "hello"


def test_bad_or_missing_date_falls_back_to_the_internal_date():
    assert build(b"Date: yesterday-ish\r\n\r\nx")["sentDate"] == "2024-05-02T10:20:30+0000"
    assert build(b"Subject: s\r\n\r\nx")["sentDate"] == "2024-05-02T10:20:30+0000"


def test_options():
    bare = build(MULTIPART, options=DocumentOptions(index_headers=False, index_user=False))
    assert bare["headers"] == [] and "user" not in bare and bare["textBody"]
    no_body = build(MULTIPART, options=DocumentOptions(index_body=False))
    assert (no_body["textBody"], no_body["htmlBody"], no_body["attachments"], no_body["hasAttachment"]) == \
           (None, None, [], False)
    assert no_body["from"] and no_body["subject"]   # headers still indexed
    no_attachments = build(MULTIPART, options=DocumentOptions(index_attachments=False))
    assert no_attachments["attachments"] == [] and no_attachments["hasAttachment"] is False
    assert no_attachments["textBody"]


def test_event_metadata_needs_the_mailbox_id():
    meta = metadata()
    event_meta = meta.for_event()
    assert isinstance(event_meta, EventMessageMetadata)
    with pytest.raises(ValueError, match="mailbox id"):
        message_document(event_meta, MULTIPART, None)
    document = message_document(event_meta, MULTIPART, None, mailbox_id=meta.mailbox_id)
    assert document["mailboxId"] == str(meta.mailbox_id) and "user" not in document


def test_flags_document_is_james_message_update_json():
    assert flags_document(Flags.of(SystemFlag.ANSWERED, user=["b", "a"]), 9) == {
        "isAnswered": True, "isDeleted": False, "isDraft": False, "isFlagged": False, "isRecent": False,
        "isUnread": True, "userFlags": ["a", "b"], "modSeq": 9}


# ---------------------------------------------------------------- hostile input
def test_deeply_nested_multiparts_do_not_break_indexing():
    depth = 5000
    raw = b"Subject: deep\r\n" + b"".join(
        b"Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n" % (i, i) for i in range(depth))
    raw += b"Content-Type: text/plain\r\n\r\nbottom\r\n"
    document = build(raw)
    assert document["subject"] == ["deep"]
    assert document["textBody"] is None   # beyond the walk's depth limit: opaque


def test_huge_header_counts_and_values_are_cut_to_what_opensearch_accepts():
    many_headers = b"".join(b"X-H%d: v\r\n" % i for i in range(20_000))
    long_subject = b"Subject: " + b"\xc3\xa9" * 20_000 + b"\r\n"
    many_addresses = b"To: " + b", ".join(b"u%d@example.com" % i for i in range(3000)) + b"\r\n"
    long_name = b"From: " + b"N" * 40_000 + b" <n@example.com>\r\n"
    document = build(many_headers + long_subject + many_addresses + long_name + b"\r\nbody")
    assert len(document["headers"]) == doc.MAX_HEADERS
    assert all(len(s.encode()) <= doc.MAX_KEYWORD_BYTES for s in document["subject"])
    assert 0 < len(document["to"]) <= doc.MAX_ADDRESSES
    for emailer in document["from"]:
        assert all(len((v or "").encode()) <= doc.MAX_KEYWORD_BYTES for v in emailer.values())


def test_broken_encodings_and_charsets_give_text_not_errors():
    raw = (b"Subject: =?x-unknown?q?abc?= =?utf-8?b?####?=\r\nFrom: \xff\xfe <\xff@example.com>\r\n"
           b"Content-Type: multipart/mixed; boundary=z\r\n\r\n--z\r\nContent-Type: text/plain; charset=nonsense\r\n"
           b"Content-Transfer-Encoding: base64\r\n\r\n!!!not base64!!!\r\n--z\r\nContent-Type: application/x\r\n"
           b"Content-Disposition: attachment; filename*=bogus''%ZZ%\r\n\r\nx\r\n")   # no close delimiter
    document = build(raw)
    assert document["subject"]
    assert isinstance(document["textBody"], str)
    assert_in_mapping(document, MAILBOX_MAPPING["properties"])


def test_no_header_at_all():
    document = build(b"\r\njust a body")
    assert document["headers"] == [] and document["subject"] == []
    assert document["textBody"].strip() == "just a body"


# ---------------------------------------------------------------- mapping
def test_mapping_is_james_default_mailbox_mapping():
    body = index_body(shards=3, replicas=0)
    mapping = body["mappings"]
    assert mapping["dynamic"] == "strict" and mapping["_routing"] == {"required": True}
    properties = mapping["properties"]
    assert properties["headers"]["type"] == "nested"
    assert properties["messageId"] == {"type": "keyword", "store": True}
    assert properties["uid"] == {"type": "long", "store": True}
    assert properties["mailboxId"] == {"type": "keyword", "store": True}
    assert "fields" not in properties["bcc"]["properties"]["name"]   # as James
    assert properties["to"]["properties"]["address"]["search_analyzer"] == "keep_mail_and_url"
    assert properties["subject"]["fields"]["raw"] == {"type": "keyword", "normalizer": "case_insensitive"}
    assert body["settings"]["number_of_shards"] == 3 and body["settings"]["number_of_replicas"] == 0
    assert body["settings"]["analysis"]["analyzer"]["keep_mail_and_url"]["tokenizer"] == "uax_url_email"
    body["mappings"]["properties"].clear()   # a copy: the module's mapping is untouched
    assert MAILBOX_MAPPING["properties"]
