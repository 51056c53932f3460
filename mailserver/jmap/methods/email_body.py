"""An Email's body structure (RFC 8621 4.1.4): its leaf parts, textBody and htmlBody chosen by the
RFC's own algorithm, and the decoded text of the parts asked for in bodyValues.

The tree is IMAP's bounded MIME tree (``imap/mime.py``): built without recursion, at most
``MAX_DEPTH`` containers deep and ``MAX_PARTS`` parts, offsets into the message rather than
copies. An attached message (``message/rfc822``) is a leaf, as RFC 8621 has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from mailserver.imap import mime

PART_PROPERTIES = ("partId", "blobId", "size", "name", "type", "charset", "disposition", "cid", "language",
                   "location")


@dataclass
class Part:
    part_id: str
    node: mime.Part

    @property
    def type(self) -> str:
        main, sub = self.node.content_type
        return f"{main}/{sub}"

    @property
    def fields(self) -> Message:
        return self.node.fields

    def decoded(self) -> bytes:
        """The body with its transfer encoding undone (base64, quoted-printable)."""
        holder = Message()
        encoding = self.fields.get("Content-Transfer-Encoding")
        if encoding is not None:
            holder["Content-Transfer-Encoding"] = str(encoding)
        holder.set_payload(self.node.body.decode("ascii", "surrogateescape"))   # as email's parser stores it
        payload = holder.get_payload(decode=True)
        return payload if isinstance(payload, bytes) else b""

    def properties(self, email_id: str) -> dict[str, Any]:
        fields = self.fields
        cid, language = fields.get("Content-ID"), fields.get("Content-Language")
        disposition = None if self.node.opaque else fields.get_content_disposition()
        return {"partId": self.part_id, "blobId": f"{email_id}_{self.part_id}", "size": len(self.decoded()),
                "name": None if self.node.opaque else _filename(fields), "type": self.type,
                "charset": (self.node.param("charset") or "us-ascii") if self.type.startswith("text/") else None,
                "disposition": disposition, "cid": str(cid).strip().strip("<>") if cid is not None else None,
                "language": [x.strip() for x in str(language).split(",")] if language is not None else None,
                "location": str(fields["Content-Location"]) if fields.get("Content-Location") else None}

    def text(self) -> tuple[str, bool]:
        """The decoded text, and whether decoding met a problem (characters replaced)."""
        raw = self.decoded()
        charset = self.node.param("charset") or "us-ascii"
        try:
            return raw.decode(charset), False
        except (LookupError, UnicodeDecodeError):
            return raw.decode(charset if _known(charset) else "utf-8", errors="replace"), True


def _filename(fields: Message) -> str | None:
    try:
        return fields.get_filename()
    except Exception:   # a malformed parameter reads as no name
        return None


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


def structure(raw: bytes) -> Structure:
    """textBody, htmlBody and attachments; leaf parts are numbered 1, 2, ... in document order."""
    root = mime.parse(raw)
    parts = _number_leaves(root)
    found = Structure()
    if _is_container(root):
        subtype = root.content_type[1]
        _parse(root.children, parts, subtype, subtype == "alternative", found.html_body, found.text_body,
               found.attachments)
    else:
        _parse([root], parts, "mixed", False, found.html_body, found.text_body, found.attachments)
    return found


def _is_container(node: mime.Part) -> bool:
    return node.is_multipart and not node.opaque


def _number_leaves(root: mime.Part) -> dict[int, Part]:
    parts: dict[int, Part] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if _is_container(node):
            stack.extend(reversed(node.children))
        else:
            parts[id(node)] = Part(str(len(parts) + 1), node)
    return parts


def _inline_media(type_: str) -> bool:
    return type_.startswith(("image/", "audio/", "video/"))


def _parse(children: list[mime.Part], parts: dict[int, Part], multipart_type: str, in_alternative: bool,
           html_body: list[Part] | None, text_body: list[Part] | None, attachments: list[Part]) -> None:
    """RFC 8621 4.1.4's ``parseStructure``, as written there (a null list stops receiving parts).

    It recurses once per container level: the tree is at most ``MAX_DEPTH`` deep."""
    text_length = len(text_body) if text_body is not None else -1
    html_length = len(html_body) if html_body is not None else -1
    for i, child in enumerate(children):
        if _is_container(child):
            sub_type = child.content_type[1]
            _parse(child.children, parts, sub_type, in_alternative or sub_type == "alternative",
                   html_body, text_body, attachments)
            continue
        part = parts[id(child)]
        type_ = part.type
        is_inline = ((child.opaque or part.fields.get_content_disposition() != "attachment")
                     and (type_ in ("text/plain", "text/html") or _inline_media(type_))
                     and (i == 0 or (multipart_type != "related"
                                     and (_inline_media(type_) or not _filename(part.fields)))))
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
