"""BODY and BODYSTRUCTURE (RFC 3501 §7.4.2) from the MIME tree of ``mime.py``.

Sizes and line counts are those of the raw body octets (as transmitted, still encoded).
The tree is bounded (``mime.py``: at most ``MAX_DEPTH`` levels, its opaque parts described as
text/plain), so the recursion here is too. BODYSTRUCTURE adds the extension data: MD5 (the
Content-MD5 field), disposition, language, location.
"""

from __future__ import annotations

import re
from email.message import Message
from email.utils import collapse_rfc2231_value

from mailserver.imap.envelope import envelope, raw_value
from mailserver.imap.mime import Part
from mailserver.imap.response import nil_or_list, nstring, number, paren, string

_COMMENT = re.compile(r"\([^()]*\)")


def _param_pairs(fields: Message, header: str = "content-type") -> list[tuple[str, str]]:
    params = fields.get_params(header=header, failobj=None) or []
    pairs: list[tuple[str, str]] = []
    for key, value in params[1:]:   # the first is the value itself (type/subtype or disposition)
        if isinstance(value, tuple):
            value = collapse_rfc2231_value(value)
        if key:   # a trailing ";" gives an empty pair
            pairs.append((key.lower(), str(value).strip('"')))
    return pairs


def _params(pairs: list[tuple[str, str]]) -> bytes:
    """Names lower-cased (they are case-insensitive) and sorted, values as sent: James's form."""
    return nil_or_list([item for key, value in sorted(pairs, key=lambda pair: pair[0])
                        for item in (string(key), string(value))])


def _disposition(fields: Message) -> bytes:
    value = fields.get("content-disposition")
    if value is None:
        return b"NIL"
    kind = str(value).split(";", 1)[0].strip()
    if not kind:
        return b"NIL"
    return paren([string(kind), _params(_param_pairs(fields, "content-disposition"))])


def _extension(fields: Message) -> list[bytes]:
    language = raw_value(fields, "content-language")
    languages = [string(x.strip()) for x in language.split(",") if x.strip()] if language else []
    return [_disposition(fields), nil_or_list(languages),
            _location(fields)]


def _location(fields: Message) -> bytes:
    """The URI of Content-Location without its comments, quotes and folding (RFC 2557 4.1)."""
    value = raw_value(fields, "content-location")
    if value is None:
        return b"NIL"
    return nstring("".join(_COMMENT.sub(" ", value).replace('"', "").split()) or None)


def body_structure(part: Part, *, extensible: bool = True) -> bytes:
    main, sub = part.content_type
    fields = part.fields
    if part.is_multipart:
        items = [body_structure(child, extensible=extensible) for child in part.children]
        items.append(string(sub.upper()))
        if extensible:
            items.append(_params(_param_pairs(fields)))
            items.extend(_extension(fields))
        return b"(" + b"".join(items[:len(part.children)]) + b" " + b" ".join(items[len(part.children):]) + b")"
    params = _param_pairs(fields)
    if main == "text" and not any(key == "charset" for key, _ in params):
        params.append(("charset", "us-ascii"))   # RFC 2045 5.2's default
    items = [string(main.upper()), string(sub.upper()), _params(params),
             nstring(raw_value(fields, "content-id")), nstring(raw_value(fields, "content-description")),
             string((raw_value(fields, "content-transfer-encoding") or "7BIT").upper()), number(part.body_size)]
    if (main, sub) == ("message", "rfc822") and part.message is not None:
        items += [envelope(part.message.fields), body_structure(part.message, extensible=extensible),
                  number(part.body_lines)]
    elif main == "text":
        items.append(number(part.body_lines))
    if extensible:
        items.append(nstring(raw_value(fields, "content-md5")))
        items.extend(_extension(fields))
    return paren(items)
