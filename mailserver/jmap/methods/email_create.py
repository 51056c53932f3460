"""``Email/set`` create (RFC 8621 4.6): a message written from JMAP properties.

Served: ``mailboxIds`` (required), ``keywords``, ``receivedAt``, the convenience headers (``from``,
``sender``, ``to``, ``cc``, ``bcc``, ``replyTo``, ``subject``, ``sentAt``, ``messageId``,
``inReplyTo``, ``references``), and the body as ``textBody`` / ``htmlBody`` (one part each, its
content in ``bodyValues``) with ``attachments`` whose ``blobId`` names a blob the user may read
(an upload, a message, a part).
Not served: ``bodyStructure`` and ``header:`` forms (``invalidProperties``).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from email import policy
from email.headerregistry import Address
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.methods.blobs import read_blob
from mailserver.jmap.methods.email_headers import ADDRESS_FIELDS, ID_FIELDS
from mailserver.jmap.methods.email_store import keyword_flags, received_at, store, target_mailboxes
from mailserver.jmap.methods.set_errors import SetError
from mailserver.jmap.methods.user_messages import UserMessages

SETTABLE = frozenset({"mailboxIds", "keywords", "receivedAt", *ADDRESS_FIELDS, *ID_FIELDS, "subject", "sentAt",
                      "textBody", "htmlBody", "attachments", "bodyValues"})
# Properties the server sets (RFC 8621 4.6: a create giving them is refused).
SERVER_SET = frozenset({"id", "blobId", "threadId", "size", "preview", "hasAttachment"})
MESSAGE_ID_DOMAIN = "jmap.mailserver"


def create(context: CallContext, messages: UserMessages, creation_id: str, email: Any) -> dict[str, Any]:
    if not isinstance(email, dict):
        raise SetError("invalidArguments", "an Email to create is an object")
    refused = sorted(p for p in email if p not in SETTABLE)
    if refused:
        why = "set by the server" if set(refused) <= SERVER_SET else "not supported in a creation"
        raise SetError("invalidProperties", f"{', '.join(refused)}: {why}", refused)
    mailboxes = target_mailboxes(context, messages, email.get("mailboxIds"))
    flags = keyword_flags(email.get("keywords"))
    received = received_at(email.get("receivedAt"))
    raw = build_message(email, context)
    return store(context, messages, creation_id, raw, mailboxes, flags, received)


def build_message(email: dict[str, Any], context: CallContext) -> bytes:
    message = EmailMessage(policy=policy.SMTP)
    for prop, name in ADDRESS_FIELDS.items():
        addresses = _addresses(email.get(prop), prop)
        if addresses:   # an empty list writes no field
            message[name] = addresses
    if email.get("subject") is not None:
        message["Subject"] = _string(email["subject"], "subject")
    message["Date"] = format_datetime(_sent_at(email.get("sentAt")))
    ids = {prop: _ids(email.get(prop), prop) for prop in ID_FIELDS}
    message["Message-ID"] = f"<{ids['messageId'][0]}>" if ids["messageId"] else \
        f"<{uuid.uuid4().hex}@{MESSAGE_ID_DOMAIN}>"
    for prop in ("inReplyTo", "references"):
        if ids[prop]:
            message[ID_FIELDS[prop]] = " ".join(f"<{i}>" for i in ids[prop])
    _set_body(message, email)
    for attachment in _list(email.get("attachments"), "attachments"):
        _attach(message, attachment, context)
    return message.as_bytes()


def _string(value: Any, prop: str) -> str:
    if not isinstance(value, str) or "\r" in value or "\n" in value:
        raise SetError("invalidProperties", f"{prop} must be a string on one line", [prop])
    return value


def _list(value: Any, prop: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise SetError("invalidProperties", f"{prop} must be an array", [prop])
    return value


def _addresses(value: Any, prop: str) -> list[Address]:
    found = []
    for item in _list(value, prop):
        email = item.get("email") if isinstance(item, dict) else None
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(email, str) or not (name is None or isinstance(name, str)):
            raise SetError("invalidProperties", f"{prop} is an array of {{name, email}}", [prop])
        try:
            found.append(Address(display_name=name or "", addr_spec=email))
        except (ValueError, IndexError):
            raise SetError("invalidProperties", f"{prop}: {email!r} is not an address", [prop]) from None
    return found


def _ids(value: Any, prop: str) -> list[str]:
    ids = _list(value, prop)
    if not all(isinstance(i, str) and i and not set(i) & set("<> \r\n") for i in ids):
        raise SetError("invalidProperties", f"{prop} is an array of message ids without angle brackets", [prop])
    return ids


def _sent_at(value: Any) -> datetime:
    if value is None:
        return datetime.now(UTC)
    try:
        date = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        date = None
    if date is None or date.tzinfo is None:
        raise SetError("invalidProperties", "sentAt must be a Date with its offset", ["sentAt"])
    return date


def _set_body(message: EmailMessage, email: dict[str, Any]) -> None:
    values = email.get("bodyValues") or {}
    if not isinstance(values, dict):
        raise SetError("invalidProperties", "bodyValues maps part ids to values", ["bodyValues"])
    text = _body_part(email, "textBody", "text/plain", values)
    html = _body_part(email, "htmlBody", "text/html", values)
    if text is None and html is None:
        message.set_content("")
        return
    if text is not None:
        message.set_content(text)
    if html is not None:
        if text is None:
            message.set_content(html, subtype="html")
        else:
            message.add_alternative(html, subtype="html")


def _body_part(email: dict[str, Any], prop: str, media_type: str, values: dict[str, Any]) -> str | None:
    """The content of the one part ``textBody`` / ``htmlBody`` may hold, from ``bodyValues``."""
    parts = _list(email.get(prop), prop)
    if not parts:
        return None
    if len(parts) != 1 or not isinstance(parts[0], dict):
        raise SetError("invalidProperties", f"{prop} holds one part", [prop])
    part = parts[0]
    if part.get("type", media_type).lower() != media_type:
        raise SetError("invalidProperties", f"{prop}'s part must be {media_type}", [prop])
    if "blobId" in part or part.get("partId") not in values:
        raise SetError("invalidProperties", f"{prop}'s part names its content by a partId of bodyValues", [prop])
    value = values[part["partId"]]
    if not isinstance(value, dict) or not isinstance(value.get("value"), str) \
            or value.get("isEncodingProblem") or value.get("isTruncated"):
        raise SetError("invalidProperties", "a body value is {value} (not truncated, no encoding problem)",
                       ["bodyValues"])
    content: str = value["value"]
    return content


def _attach(message: EmailMessage, attachment: Any, context: CallContext) -> None:
    blob_id = attachment.get("blobId") if isinstance(attachment, dict) else None
    if not isinstance(blob_id, str):
        raise SetError("invalidProperties", "an attachment names its blobId", ["attachments"])
    blob = read_blob(context, blob_id)
    if blob is None:
        raise SetError("blobNotFound", f"no blob {blob_id}", notFound=[blob_id])
    maintype, _, subtype = str(attachment.get("type") or blob.content_type).partition("/")
    name = attachment.get("name")
    disposition = attachment.get("disposition") or "attachment"
    if not message.is_multipart() or message.get_content_type() != "multipart/mixed":
        message.make_mixed()
    message.add_attachment(blob.data, maintype=maintype, subtype=subtype or "octet-stream", filename=name,
                           disposition=disposition)
