"""Build James's index document for a message (``IndexableMessage`` / ``MessageToOpenSearchJson``).

Pure functions of the message metadata and content: no server state, no client, so the reindex
Spark job builds the very documents the listener builds. MIME structure comes from the bounded
walk of ``mailserver.mailbox.content`` (depth, part count and structural headers bounded); the top
header is parsed once, headers only. Hostile input is cut where OpenSearch would otherwise refuse
the whole document (see the ``MAX_*`` constants): a message is always indexable.
"""

from __future__ import annotations

import base64
import binascii
import logging
import quopri
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from email.message import Message
from email.parser import BytesHeaderParser
from email.policy import compat32
from email.utils import getaddresses, parsedate_to_datetime
from typing import Any, Protocol

from mailserver.mailbox.content import (
    MAX_HEADER_BYTES,
    _strip_html,
    _text,
    leaf_parts,
)
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.search import mapping as f
from mailserver.search.config import DEFAULT_DOCUMENT_OPTIONS, DocumentOptions

log = logging.getLogger(__name__)

ID_SEPARATOR = ":"
# Lucene refuses a keyword term over 32,766 bytes and the whole document with it; the case-insensitive
# normalizer (asciifolding) can lengthen a value, so keyword-bearing values are cut well below.
MAX_KEYWORD_BYTES = 8191
# OpenSearch refuses a document with more than 10,000 nested objects (index.mapping.nested_objects.limit).
MAX_HEADERS = 1000
MAX_ADDRESSES = 500            # per address field
MAX_ADDRESS_HEADER_CHARS = 16 * 1024   # parsed per address header (the parser is not linear on hostile input)
MAX_TEXT_CHARS = 1_000_000     # per body or attachment text (OpenSearch's default highlight.max_analyzed_offset)
MAX_SUBJECT_PASSES = 100


class MessageMetadataLike(Protocol):
    """``MessageMetadata`` (store, with ``mailbox_id``) or ``EventMessageMetadata`` (event, mailbox given)."""

    # Read-only members: both classes are frozen dataclasses.
    @property
    def uid(self) -> int: ...

    @property
    def mod_seq(self) -> int: ...

    @property
    def flags(self) -> Flags: ...

    @property
    def size(self) -> int: ...

    @property
    def internal_date(self) -> datetime: ...

    @property
    def save_date(self) -> datetime | None: ...

    @property
    def message_id(self) -> MessageId: ...

    @property
    def thread_id(self) -> MessageId: ...


def document_id(mailbox_id: MailboxId | str, uid: int) -> str:
    """James's document id: ``<mailboxId>:<uid>``."""
    return f"{mailbox_id}{ID_SEPARATOR}{int(uid)}"


def routing_key(mailbox_id: MailboxId | str) -> str:
    """James's routing: the serialized mailbox id (MailboxIdRoutingKeyFactory)."""
    return str(mailbox_id)


def format_date(value: datetime) -> str:
    """James's ``yyyy-MM-dd'T'HH:mm:ssZ`` (second resolution), in UTC: ``2024-05-02T10:20:00+0000``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S+0000")


def flags_document(flags: Flags, mod_seq: int) -> dict[str, Any]:
    """The partial document of a flags update (James's ``MessageUpdateJson``)."""
    return {
        f.IS_ANSWERED: flags.has(SystemFlag.ANSWERED),
        f.IS_DELETED: flags.has(SystemFlag.DELETED),
        f.IS_DRAFT: flags.has(SystemFlag.DRAFT),
        f.IS_FLAGGED: flags.has(SystemFlag.FLAGGED),
        f.IS_RECENT: flags.has(SystemFlag.RECENT),
        f.IS_UNREAD: not flags.has(SystemFlag.SEEN),
        f.USER_FLAGS: sorted(_keyword(flag) for flag in flags.user),
        f.MODSEQ: int(mod_seq),
    }


def flags_of(document: dict[str, Any]) -> Flags:
    """The flags an indexed document holds (James's ``retrieveIndexedFlags``)."""
    system = {flag for flag, field, when in _FLAG_FIELDS if bool(document.get(field)) == when}
    return Flags(frozenset(system), frozenset(document.get(f.USER_FLAGS) or ()))


_FLAG_FIELDS = ((SystemFlag.ANSWERED, f.IS_ANSWERED, True), (SystemFlag.DELETED, f.IS_DELETED, True),
                (SystemFlag.DRAFT, f.IS_DRAFT, True), (SystemFlag.FLAGGED, f.IS_FLAGGED, True),
                (SystemFlag.RECENT, f.IS_RECENT, True), (SystemFlag.SEEN, f.IS_UNREAD, False))


def message_document(metadata: MessageMetadataLike, content: bytes, user: object | None, *,
                     mailbox_id: MailboxId | str | None = None,
                     options: DocumentOptions = DEFAULT_DOCUMENT_OPTIONS) -> dict[str, Any]:
    """The index document of one message in one mailbox (its ``_source``).

    ``content`` is the whole RFC 5322 message (header and body). ``mailbox_id`` is taken from
    ``metadata`` when it has one (store metadata); event metadata needs it given. ``user`` (the
    mailbox owner) is written when ``options.index_user``. Never raises on hostile content: a part
    that cannot be decoded yields no text.
    """
    box = mailbox_id if mailbox_id is not None else getattr(metadata, "mailbox_id", None)
    if box is None:
        raise ValueError("message_document needs a mailbox id (metadata.mailbox_id or mailbox_id=)")
    header_bytes, _ = _split_header(content)
    top = _HEADERS.parsebytes(header_bytes[:MAX_HEADER_BYTES])
    headers = _header_fields(top)
    body = _Body.empty() if not options.index_body else _body_of(content, top, options.index_attachments)
    sent = _sent_date(headers) or metadata.internal_date
    document: dict[str, Any] = {
        f.ATTACHMENTS: body.attachments,
        f.BCC: _emailers(headers, "bcc"),
        f.HTML_BODY: body.html,
        f.TEXT_BODY: body.text,
        f.CC: _emailers(headers, "cc"),
        f.DATE: format_date(metadata.internal_date),
        f.FROM: _emailers(headers, "from"),
        f.HAS_ATTACHMENT: body.has_attachment,
        f.HEADERS: ([{f.NAME: _keyword(name), f.VALUE: value} for name, value in headers[:MAX_HEADERS]]
                    if options.index_headers else []),
        f.MAILBOX_ID: str(box),
        f.MEDIA_TYPE: _keyword(top.get_content_maintype()),
        f.MESSAGE_ID: str(metadata.message_id),
        f.THREAD_ID: str(metadata.thread_id),
        f.SENT_DATE: format_date(sent),
        f.SAVE_DATE: format_date(metadata.save_date) if metadata.save_date is not None else None,
        f.SIZE: int(metadata.size),
        f.SUBJECT: subjects([value for name, value in headers if name == "subject"]),
        f.SUBTYPE: _keyword(top.get_content_subtype()),
        f.TO: _emailers(headers, "to"),
        f.UID: int(metadata.uid),
        f.MIME_MESSAGE_ID: _mime_message_id(headers),
    }
    document.update(flags_document(metadata.flags, metadata.mod_seq))
    if options.index_user and user is not None:
        document[f.USER] = _keyword(str(user))
    return document


# ---------------------------------------------------------------- headers
_HEADERS = BytesHeaderParser(policy=compat32)
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_FOLD = re.compile(r"\r?\n(?=[ \t])")
_ENCODED_WORD = re.compile(r"=\?([^?\s]{1,64})\?([bBqQ])\?([^?\s]*)\?=")
_BETWEEN_ENCODED_WORDS = re.compile(r"(=\?[^?\s]{1,64}\?[bBqQ]\?[^?\s]*\?=)[ \t\r\n]+(?==\?[^?\s]{1,64}\?[bBqQ]\?)")


def _split_header(content: bytes) -> tuple[bytes, bytes]:
    if content.startswith((b"\r\n", b"\n")):
        return b"", content
    end = _HEADER_END.search(content, 0, MAX_HEADER_BYTES + 4)
    if end is None:
        return content[:MAX_HEADER_BYTES], b""
    return content[:end.end()], content[end.end():]


def _as_text(value: object) -> str:
    """A compat32 header value (ASCII with surrogate escapes for raw 8-bit) as text: raw UTF-8 is read as UTF-8."""
    text = str(value)
    try:
        return text.encode("ascii", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:   # already text (e.g. a Header object's str)
        return text


def unfold(value: str) -> str:
    return _FOLD.sub("", value)


def decode_words(value: str) -> str:
    """RFC 2047 encoded words decoded (linear; an undecodable word stays as written)."""
    if "=?" not in value:
        return value
    value = _BETWEEN_ENCODED_WORDS.sub(r"\1", value)   # white space between encoded words is not text

    def decode(match: re.Match[str]) -> str:
        charset, encoding, payload = match.group(1).split("*", 1)[0], match.group(2).upper(), match.group(3)
        try:
            if encoding == "B":
                data = base64.b64decode(payload + "=" * (-len(payload) % 4))
            else:
                data = quopri.decodestring(payload.replace("_", " ").encode("ascii", "replace"), header=True)
            return data.decode(charset, "replace")
        except (LookupError, ValueError, binascii.Error, UnicodeError):
            return match.group(0)

    return _ENCODED_WORD.sub(decode, value)


def _header_fields(top: Message) -> list[tuple[str, str]]:
    """(lower-cased name, unfolded and decoded value) of every top-level field, in order (HeaderCollection)."""
    fields = []
    for name, value in top.raw_items():
        fields.append((_as_text(name).strip().lower(), decode_words(unfold(_as_text(value))).strip()))
    return fields


def _emailers(headers: list[tuple[str, str]], name: str) -> list[dict[str, Any]]:
    """EMailers of every ``name`` field, distinct, in order (James: a set of name/address/domain)."""
    values = [unfold(raw)[:MAX_ADDRESS_HEADER_CHARS] for field, raw in headers if field == name]
    seen: set[tuple[Any, ...]] = set()
    result: list[dict[str, Any]] = []
    for display, address in _addresses(values):
        address = address.strip()
        if not address:
            continue
        display_name = decode_words(display).strip() or None
        domain = address.rpartition("@")[2] if "@" in address else None
        entry = (display_name, address, domain)
        if entry in seen:
            continue
        seen.add(entry)
        result.append({f.NAME: _keyword(display_name) if display_name else None,
                       f.ADDRESS: _keyword(address), f.DOMAIN: _keyword(domain) if domain else None})
        if len(result) >= MAX_ADDRESSES:
            break
    return result


def _addresses(values: list[str]) -> Iterable[tuple[str, str]]:
    try:
        return getaddresses(values)
    except Exception:
        log.warning("unparseable address header ignored")
        return []


def _sent_date(headers: list[tuple[str, str]]) -> datetime | None:
    value = next((v for name, v in reversed(headers) if name == "date"), None)
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value[:256])
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _mime_message_id(headers: list[tuple[str, str]]) -> str | None:
    value = next((v for name, v in reversed(headers) if name == "message-id"), None)
    return _keyword(value) if value else None


def _keyword(value: str) -> str:
    data = value.encode("utf-8", "replace")
    if len(data) <= MAX_KEYWORD_BYTES:
        return value
    return data[:MAX_KEYWORD_BYTES].decode("utf-8", "ignore")


# ---------------------------------------------------------------- subjects (SubjectsDto, SearchUtil)
_LEADER = re.compile(r"^(?:\[[^\[\]]*\][ \t]*)*(?:re|fwd?)[ \t]*(?:\[[^\[\]]*\][ \t]*)?:[ \t]*", re.IGNORECASE)
_BLOB = re.compile(r"^\[[^\[\]]*\][ \t]*")


def base_subject(subject: str) -> str:
    """RFC 5256 base subject, as James's ``SearchUtil.getBaseSubject``: no Re:/Fwd:, [blob] or (fwd)."""
    text = " ".join(subject.split())
    for _ in range(MAX_SUBJECT_PASSES):
        while True:   # (2) trailers
            stripped = text.rstrip()
            if stripped.lower().endswith("(fwd)") and len(stripped) > 5:
                stripped = stripped[:-5]
            if stripped == text:
                break
            text = stripped
        for _ in range(MAX_SUBJECT_PASSES):   # (3)-(5) leaders and blobs
            before = text
            text = text.lstrip(" \t")
            text = _LEADER.sub("", text, count=1)
            without_blob = _BLOB.sub("", text, count=1)
            if without_blob:
                text = without_blob
            if text == before:
                break
        lowered = text.lower()
        if lowered.startswith("[fwd:") and lowered.endswith("]"):   # (6)
            text = text[5:-1]
            continue
        break
    return text


def _qualifiers(subject: str) -> list[str]:
    """Bracketed qualifiers (``[JIRA]``, ``[list.example.com]``) and their domain suffixes (SubjectsDto)."""
    result: list[str] = []
    current: list[str] = []
    inside = False
    for char in subject:
        if char == "[":
            inside, current = True, []
        elif char == "]":
            if inside:
                qualifier = "".join(current)
                result.append(qualifier)
                parts = [p for p in qualifier.split(".") if p]
                for i in range(len(parts) - 1):
                    result.extend((".".join(parts[i:]), parts[i]))
                inside = False
        elif inside:
            current.append(char)
    return result


def subjects(values: list[str]) -> list[str]:
    """The ``subject`` field: each subject's base subject and qualifiers, distinct, cut for the raw keyword."""
    result: dict[str, None] = {}
    for value in values:
        value = _keyword(value)
        for item in [base_subject(value), *_qualifiers(value)]:
            result.setdefault(item, None)
    return list(result)


# ---------------------------------------------------------------- body (MimePart)
class _Body:
    def __init__(self, text: str | None, html: str | None, attachments: list[dict[str, Any]],
                 has_attachment: bool) -> None:
        self.text, self.html, self.attachments, self.has_attachment = text, html, attachments, has_attachment

    @classmethod
    def empty(cls) -> _Body:
        return cls(None, None, [], False)


_CONTAINERS = ("message/rfc822", "message/global")


def _body_of(content: bytes, top: Message, index_attachments: bool) -> _Body:
    root_is_leaf = top.get_content_maintype() != "multipart" and top.get_content_type() not in _CONTAINERS
    text: str | None = None
    html: str | None = None
    attachments: list[dict[str, Any]] = []
    has_attachment = False
    try:
        for position, part in enumerate(leaf_parts(content)):
            ctype = part.get_content_type()
            if ctype == "text/plain" and text is None:
                text = _remove_quote_markers(_decoded(part))
            elif ctype == "text/html" and html is None:
                html = _decoded(part, html=True)
            if position == 0 and root_is_leaf:
                continue   # the message itself is no attachment (James: attachments are descendants)
            disposition = part.get_content_disposition()
            if disposition is None or not index_attachments:
                continue
            attachment = _attachment(part, disposition)
            attachments.append(attachment)
            if not (disposition == "inline" and part.get("Content-ID")):
                has_attachment = True
    except Exception as exc:
        log.warning("message body only partly indexed (%s: %s)", type(exc).__name__, exc)
    return _Body(text, html if text is None else None, attachments, has_attachment)


def _decoded(part: Message, *, html: bool = False) -> str:
    value = _text(part)
    if html:
        value = _strip_html(value)
    return value[:MAX_TEXT_CHARS]


def _remove_quote_markers(text: str) -> str:
    """``>`` at the start of lines removed (SearchUtil.removeGreaterThanCharactersAtBeginningOfLine)."""
    return re.sub(r"(?m)^>+", "", text)


def _attachment(part: Message, disposition: str) -> dict[str, Any]:
    name = _file_name(part)
    ctype = part.get_content_type()
    text_content = None
    if part.get_content_maintype() == "text":
        text_content = _decoded(part, html=ctype == "text/html")
    return {
        f.TEXT_CONTENT: text_content,
        f.MEDIA_TYPE: _keyword(part.get_content_maintype()),
        f.SUBTYPE: _keyword(part.get_content_subtype()),
        f.FILE_NAME: name,
        f.FILE_EXTENSION: _keyword(name.rpartition(".")[2]) if name is not None and "." in name
        else ("" if name is not None else None),
        f.CONTENT_DISPOSITION: _keyword(disposition),
    }


def _file_name(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except Exception:
        return None
    if not name:
        return None
    return decode_words(unfold(_as_text(name))).strip() or None
