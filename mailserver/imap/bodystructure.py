"""BODY and BODYSTRUCTURE (RFC 3501 §7.4.2) from the MIME tree of ``mime.py``.

Sizes and line counts are those of the raw body octets (as transmitted, still encoded).
The tree is bounded (``mime.py``: at most ``MAX_DEPTH`` levels, its opaque parts described as
text/plain), so the recursion here is too. BODYSTRUCTURE adds the extension data: MD5 (always
NIL), disposition, language, location.
"""

from __future__ import annotations

from email.message import Message

from mailserver.imap.envelope import envelope, raw_value
from mailserver.imap.mime import Part
from mailserver.imap.response import nil_or_list, nstring, number, paren, string


def _params(fields: Message, header: str = "content-type") -> list[bytes]:
    params = fields.get_params(header=header, failobj=None) or []
    out: list[bytes] = []
    for key, value in params[1:]:   # the first is the value itself (type/subtype or disposition)
        if isinstance(value, tuple):
            from email.utils import collapse_rfc2231_value

            value = collapse_rfc2231_value(value)
        out += [string(key.upper()), string(str(value).strip('"'))]
    return out


def _disposition(fields: Message) -> bytes:
    value = fields.get("content-disposition")
    if value is None:
        return b"NIL"
    kind = str(value).split(";", 1)[0].strip()
    if not kind:
        return b"NIL"
    return paren([string(kind.upper()), nil_or_list(_params(fields, "content-disposition"))])


def _extension(fields: Message) -> list[bytes]:
    language = raw_value(fields, "content-language")
    languages = [string(x.strip()) for x in language.split(",") if x.strip()] if language else []
    return [_disposition(fields), nil_or_list(languages) if len(languages) != 1 else languages[0],
            nstring(raw_value(fields, "content-location"))]


def body_structure(part: Part, *, extensible: bool = True) -> bytes:
    main, sub = part.content_type
    fields = part.fields
    if part.is_multipart:
        items = [body_structure(child, extensible=extensible) for child in part.children]
        items.append(string(sub.upper()))
        if extensible:
            items.append(nil_or_list(_params(fields)))
            items.extend(_extension(fields))
        return b"(" + b"".join(items[:len(part.children)]) + b" " + b" ".join(items[len(part.children):]) + b")"
    params = _params(fields)
    if main == "text" and not any(p.upper() == b'"CHARSET"' for p in params[::2]):
        params += [string("CHARSET"), string("US-ASCII")]
    items = [string(main.upper()), string(sub.upper()), nil_or_list(params),
             nstring(raw_value(fields, "content-id")), nstring(raw_value(fields, "content-description")),
             string((raw_value(fields, "content-transfer-encoding") or "7BIT").upper()), number(part.body_size)]
    if (main, sub) == ("message", "rfc822") and part.message is not None:
        items += [envelope(part.message.fields), body_structure(part.message, extensible=extensible),
                  number(part.body_lines)]
    elif main == "text":
        items.append(number(part.body_lines))
    if extensible:
        items.append(b"NIL")   # MD5
        items.extend(_extension(fields))
    return paren(items)
