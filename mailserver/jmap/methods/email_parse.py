"""``Email/parse`` (RFC 8621 4.9): blobs (uploads, messages or attached messages the user may read)
read as Emails, as James's ``EmailParseMethod``.

As James: at most ``MAX_BLOBS`` blobs per call (its ``jmap.email.get.full.max.size`` default);
a parsed Email has no id, threadId, mailboxIds, keywords nor receivedAt (they are left out, not
null); ``notFound`` and ``notParsable`` are left out when empty.
"""

from __future__ import annotations

import logging
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.errors import MethodError, invalid_arguments
from mailserver.jmap.methods.arguments import only, properties
from mailserver.jmap.methods.blobs import read_blob
from mailserver.jmap.methods.email_body import PART_PROPERTIES
from mailserver.jmap.methods.email_headers import HEADER_PROPERTIES, header_properties, parse_header
from mailserver.jmap.methods.emails import BODY, FAST_VIEW, PROPERTIES, BodyValues, body_properties
from mailserver.mailbox.content import preview

log = logging.getLogger(__name__)

MAX_BLOBS = 5
ARGUMENTS = {"accountId", "blobIds", "properties", "bodyProperties", "fetchTextBodyValues", "fetchHTMLBodyValues",
             "fetchAllBodyValues", "maxBodyValueBytes"}
PARSED = ("blobId", "size", *sorted(HEADER_PROPERTIES), *FAST_VIEW, *BODY)   # what a blob alone tells


def parse(arguments: dict[str, Any], context: CallContext) -> dict[str, Any]:
    only(arguments, ARGUMENTS)
    account = context.check_account(arguments)
    blob_ids = arguments.get("blobIds")
    if not isinstance(blob_ids, list) or not all(isinstance(i, str) for i in blob_ids):
        raise invalid_arguments("blobIds must be an array of blob ids")
    if len(blob_ids) > MAX_BLOBS:
        raise MethodError("requestTooLarge", f"Too many items in an email parse request. "
                          f"Got {len(blob_ids)} items instead of maximum {MAX_BLOBS}.")
    wanted = set(properties(arguments, PROPERTIES, PROPERTIES))
    part_properties = properties(arguments, PART_PROPERTIES, PART_PROPERTIES, "bodyProperties")
    fetch = BodyValues(arguments)
    parsed: dict[str, dict[str, Any]] = {}
    not_found: list[str] = []
    not_parsable: list[str] = []
    for blob_id in dict.fromkeys(blob_ids):
        blob = read_blob(context, blob_id)
        if blob is None:
            not_found.append(blob_id)
            continue
        try:
            parsed[blob_id] = _email(blob_id, blob.data, wanted, part_properties, fetch)
        except Exception as error:   # whatever the bytes, the call answers: that blob is notParsable
            log.info("blob %s is not parsable as an email: %s", blob_id, error)
            not_parsable.append(blob_id)
    answer: dict[str, Any] = {"accountId": account, "parsed": parsed}
    if not_found:
        answer["notFound"] = not_found
    if not_parsable:
        answer["notParsable"] = not_parsable
    return answer


def _email(blob_id: str, raw: bytes, wanted: set[str], part_properties: list[str],
           fetch: BodyValues) -> dict[str, Any]:
    values: dict[str, Any] = {"blobId": blob_id, "size": len(raw)}
    if wanted & HEADER_PROPERTIES:
        header, _, _ = raw.partition(b"\r\n\r\n") if b"\r\n\r\n" in raw else raw.partition(b"\n\n")
        values.update(header_properties(parse_header(header + b"\r\n\r\n"), wanted))
    if wanted & set(FAST_VIEW):
        values["preview"], values["hasAttachment"] = preview(raw)
    if wanted & set(BODY):
        values.update(body_properties(raw, blob_id, part_properties, fetch))
    return {p: values[p] for p in PARSED if p in wanted}
