"""An Email's body structure (RFC 8621 4.1.4): its leaf parts, textBody and htmlBody chosen by the
RFC's own algorithm, and the decoded text of the parts asked for in bodyValues."""

from __future__ import annotations

from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser
from typing import Any

PART_PROPERTIES = ("partId", "blobId", "size", "name", "type", "charset", "disposition", "cid", "language",
                   "location")
MAX_PARTS = 500   # a hostile message must not make the walk unbounded


@dataclass
class Part:
    part_id: str
    message: Message

    @property
    def type(self) -> str:
        return self.message.get_content_type()

    def properties(self, email_id: str) -> dict[str, Any]:
        m = self.message
        payload = m.get_payload(decode=True)
        is_text = self.type.startswith("text/")
        cid = m.get("Content-ID")
        language = m.get("Content-Language")
        return {"partId": self.part_id, "blobId": f"{email_id}_{self.part_id}",
                "size": len(payload) if isinstance(payload, bytes) else 0, "name": m.get_filename(),
                "type": self.type, "charset": (m.get_content_charset() or "us-ascii") if is_text else None,
                "disposition": m.get_content_disposition(),
                "cid": str(cid).strip().strip("<>") if cid is not None else None,
                "language": [x.strip() for x in str(language).split(",")] if language is not None else None,
                "location": m.get("Content-Location")}

    def text(self) -> tuple[str, bool]:
        """The decoded text, and whether decoding met a problem (replaced characters)."""
        payload = self.message.get_payload(decode=True)
        raw = payload if isinstance(payload, bytes) else b""
        charset = self.message.get_content_charset() or "us-ascii"
        try:
            return raw.decode(charset), False
        except (LookupError, UnicodeDecodeError):
            return raw.decode(charset if _known(charset) else "utf-8", errors="replace"), True


def _known(charset: str) -> bool:
    try:
        "".encode(charset)
    except LookupError:
        return False
    return True


@dataclass
class Structure:
    text_body: list[Part] = field(default_factory=list)
    html_body: list[Part] = field(default_factory=list)
    attachments: list[Part] = field(default_factory=list)


def parse_message(raw: bytes) -> EmailMessage:
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    return message


def structure(message: Message) -> Structure:
    """textBody, htmlBody and attachments; leaf parts are numbered 1, 2, ... depth first."""
    found = Structure()
    leaves = [m for m in message.walk() if not m.is_multipart()][:MAX_PARTS]
    parts = {id(m): Part(str(n), m) for n, m in enumerate(leaves, start=1)}
    if message.is_multipart():
        subtype = message.get_content_subtype()
        _parse(_children(message), parts, subtype, subtype == "alternative", found.html_body, found.text_body,
               found.attachments)
    else:
        _parse([message], parts, "mixed", False, found.html_body, found.text_body, found.attachments)
    return found


def _children(message: Message) -> list[Message]:
    payload = message.get_payload()
    return [child for child in payload if isinstance(child, Message)] if isinstance(payload, list) else []


def _inline_media(type_: str) -> bool:
    return type_.startswith(("image/", "audio/", "video/"))


def _parse(children: list[Message], parts: dict[int, Part], multipart_type: str, in_alternative: bool,
           html_body: list[Part] | None, text_body: list[Part] | None, attachments: list[Part]) -> None:
    """RFC 8621 4.1.4's ``parseStructure``, as written there (a null list stops receiving parts)."""
    text_length = len(text_body) if text_body is not None else -1
    html_length = len(html_body) if html_body is not None else -1
    for i, child in enumerate(children):
        if child.is_multipart():
            sub_type = child.get_content_subtype()
            _parse(_children(child), parts, sub_type, in_alternative or sub_type == "alternative",
                   html_body, text_body, attachments)
            continue
        part = parts.get(id(child))
        if part is None:   # past MAX_PARTS
            continue
        type_ = part.type
        is_inline = (child.get_content_disposition() != "attachment"
                     and (type_ in ("text/plain", "text/html") or _inline_media(type_))
                     and (i == 0 or (multipart_type != "related"
                                     and (_inline_media(type_) or not child.get_filename()))))
        if not is_inline:
            attachments.append(part)
            continue
        if multipart_type == "alternative":
            target = {"text/plain": text_body, "text/html": html_body}.get(type_, attachments)
            if target is not None:
                target.append(part)
            continue
        if in_alternative:
            if type_ == "text/plain":
                html_body = None
            if type_ == "text/html":
                text_body = None
        if text_body is not None:
            text_body.append(part)
        if html_body is not None:
            html_body.append(part)
        if (text_body is None or html_body is None) and _inline_media(type_):
            attachments.append(part)
    if multipart_type == "alternative" and text_body is not None and html_body is not None:
        if text_length == len(text_body) and html_length != len(html_body):
            text_body.extend(html_body[html_length:])
        if html_length == len(html_body) and text_length != len(text_body):
            html_body.extend(text_body[text_length:])


def body_value(part: Part, max_bytes: int) -> dict[str, Any]:
    text, problem = part.text()
    truncated = False
    if max_bytes and len(text.encode()) > max_bytes:
        text = text.encode()[:max_bytes].decode("utf-8", errors="ignore")   # never half a character
        truncated = True
    return {"value": text, "isEncodingProblem": problem, "isTruncated": truncated}
