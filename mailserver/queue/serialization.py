"""James's mail reference (the RabbitMQ message body of the distributed mail queue) and attributes.

The body is the JSON "mail reference" of james-runtime.md §2.1, field names verbatim::

    {"enqueueId": "<uuid>", "recipients": [...], "name": "...", "sender": "s@z.org" | null,
     "state": "root", "errorMessage": null, "lastUpdated": "<ISO instant>",
     "attributes": {"<name>": "<JSON string of {serializer, value}>"},
     "remoteAddr": "...", "remoteHost": "...",
     "perRecipientHeaders": {"a@x.org": {"header": {"X-H": ["v"]}}},
     "headerBlobId": "...", "bodyBlobId": "..."}

Attribute values are JSON *strings* holding ``{"serializer": ..., "value": ...}`` with James's
serializer names (§1.2). Python values map as: str -> StringSerializer, bool -> BooleanSerializer,
int -> IntSerializer (LongSerializer outside 32 bits), float -> DoubleSerializer, list/tuple ->
CollectionSerializer, dict (string keys) -> MapSerializer, None -> OptionalSerializer (empty).
On reading, the other scalar serializers James writes are accepted (FloatSerializer,
DateSerializer, UrlSerializer, BytesSerializer, MessageIdDtoSerializer: their JSON value is kept
as is), NoSerializer values are dropped (James drops them too), and anything else is an error.

The message size is not part of James's reference; the queue carries it in an AMQP header.
Per-recipient headers are grouped by recipient then header name, so their order survives a
round trip only within one recipient and header name.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mailserver.model.address import InvalidAddress, MailAddress
from mailserver.model.mail import Mail, MailContent, PerRecipientHeader

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1

# Serializers whose JSON value is taken as is when reading (no Python-side type of their own).
_PASS_THROUGH = {"FloatSerializer", "DateSerializer", "UrlSerializer", "BytesSerializer",
                 "MessageIdDtoSerializer"}
_DROPPED = {"NoSerializer"}

FIELDS = ("enqueueId", "recipients", "name", "sender", "state", "errorMessage", "lastUpdated", "attributes",
          "remoteAddr", "remoteHost", "perRecipientHeaders", "headerBlobId", "bodyBlobId")
_REQUIRED = ("enqueueId", "recipients", "name", "headerBlobId", "bodyBlobId")


class SerializationError(ValueError):
    """A mail reference or an attribute that is not in James's format (or not representable)."""


class _Dropped:
    """Marker for attribute values James drops (NoSerializer)."""


_DROP = _Dropped()


# ---------------------------------------------------------------------------------- attributes
def attribute_to_json(value: Any) -> dict[str, Any]:
    """``{"serializer": ..., "value": ...}`` for a Python attribute value (nested for collections)."""
    if isinstance(value, bool):
        return {"serializer": "BooleanSerializer", "value": value}
    if isinstance(value, int):
        if INT_MIN <= value <= INT_MAX:
            return {"serializer": "IntSerializer", "value": value}
        if LONG_MIN <= value <= LONG_MAX:
            return {"serializer": "LongSerializer", "value": value}
        raise SerializationError(f"integer attribute value out of the 64-bit range: {value}")
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise SerializationError(f"non-finite float attribute value: {value}")
        return {"serializer": "DoubleSerializer", "value": value}
    if isinstance(value, str):
        return {"serializer": "StringSerializer", "value": value}
    if value is None:
        return {"serializer": "OptionalSerializer", "value": None}
    if isinstance(value, list | tuple):
        return {"serializer": "CollectionSerializer", "value": [attribute_to_json(v) for v in value]}
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise SerializationError(f"map attribute keys must be strings, got {bad[0]!r}")
        return {"serializer": "MapSerializer", "value": {k: attribute_to_json(v) for k, v in value.items()}}
    raise SerializationError(f"no James serializer for attribute values of type {type(value).__name__}")


def attribute_from_json(node: Any) -> Any:
    """The Python value of a ``{"serializer", "value"}`` node; ``_DROP`` for NoSerializer."""
    if not isinstance(node, dict) or "serializer" not in node:
        raise SerializationError(f"attribute value must be an object with 'serializer' and 'value': {node!r}")
    serializer, value = node["serializer"], node.get("value")
    if serializer in _DROPPED:
        return _DROP
    if serializer == "StringSerializer":
        return _expect(serializer, value, str)
    if serializer == "BooleanSerializer":
        return _expect(serializer, value, bool)
    if serializer in ("IntSerializer", "LongSerializer"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise SerializationError(f"{serializer} expects an integer, got {value!r}")
        return value
    if serializer == "DoubleSerializer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise SerializationError(f"{serializer} expects a number, got {value!r}")
        return float(value)
    if serializer == "OptionalSerializer":
        if value is None:
            return None
        inner = attribute_from_json(value)
        return None if inner is _DROP else inner
    if serializer == "CollectionSerializer":
        items = _expect(serializer, value, list)
        return [v for v in (attribute_from_json(i) for i in items) if v is not _DROP]
    if serializer == "MapSerializer":
        entries = _expect(serializer, value, dict)
        out = {k: attribute_from_json(v) for k, v in entries.items()}
        return {k: v for k, v in out.items() if v is not _DROP}
    if serializer in _PASS_THROUGH:
        return value
    raise SerializationError(f"unsupported attribute serializer {serializer!r}")


def _expect(serializer: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise SerializationError(f"{serializer} expects a {kind.__name__}, got {value!r}")
    return value


def attribute_to_string(value: Any) -> str:
    return json.dumps(attribute_to_json(value), separators=(",", ":"), ensure_ascii=False)


def attribute_from_string(text: str | bytes) -> Any:
    try:
        node = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SerializationError(f"attribute value is not JSON: {exc}") from exc
    return attribute_from_json(node)


def serialize_attributes(mail: Mail) -> dict[str, str]:
    """The mail's attributes as James stores them; values without a serializer are dropped (as James)."""
    out = {}
    for key, value in mail.serializable_attributes().items():
        try:
            out[key] = attribute_to_string(value)
        except SerializationError:
            continue
    return out


def deserialize_attributes(raw: Mapping[str, str | bytes] | None) -> dict[str, Any]:
    out = {}
    for key, text in (raw or {}).items():
        try:
            value = attribute_from_string(text)
        except SerializationError as exc:
            raise SerializationError(f"attribute {key!r}: {exc}") from exc
        if value is not _DROP:
            out[key] = value
    return out


# ------------------------------------------------------------------------------ date / time
def format_instant(moment: datetime) -> str:
    """Java ``Instant.toString`` style: UTC, ``Z`` suffix (fraction only when non-zero)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_instant(text: Any) -> datetime:
    if not isinstance(text, str):
        raise SerializationError(f"expected an ISO instant, got {text!r}")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise SerializationError(f"not an ISO instant: {text!r}") from exc
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# ------------------------------------------------------------------------------ per-recipient headers
def headers_to_json(headers: list[PerRecipientHeader]) -> dict[str, dict[str, dict[str, list[str]]]]:
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for h in headers:
        out.setdefault(h.recipient, {"header": {}})["header"].setdefault(h.name, []).append(h.value)
    return out


def headers_from_json(node: Any) -> list[PerRecipientHeader]:
    if node is None:
        return []
    if not isinstance(node, dict):
        raise SerializationError(f"perRecipientHeaders must be an object, got {node!r}")
    out: list[PerRecipientHeader] = []
    for recipient, entry in node.items():
        headers = entry.get("header") if isinstance(entry, dict) else None
        if not isinstance(headers, dict):
            raise SerializationError(f"perRecipientHeaders[{recipient!r}] must be {{'header': {{name: [values]}}}}")
        for name, values in headers.items():
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise SerializationError(f"perRecipientHeaders[{recipient!r}][{name!r}] must be a list of strings")
            out.extend(PerRecipientHeader(recipient, name, v) for v in values)
    return out


# ------------------------------------------------------------------------------ mail reference
@dataclass(frozen=True)
class MailReference:
    """One enqueued mail: its enqueue id and the mail, whose content is a pair of blob ids."""

    enqueue_id: uuid.UUID
    mail: Mail


def reference_to_dict(ref: MailReference) -> dict[str, Any]:
    mail = ref.mail
    if not mail.content.stored:
        raise SerializationError(f"mail {mail.name!r}: content must be stored in the blob store before enqueue")
    return {
        "enqueueId": str(ref.enqueue_id),
        "recipients": [str(r) for r in mail.recipients],
        "name": mail.name,
        "sender": str(mail.sender) if mail.sender else None,
        "state": mail.state,
        "errorMessage": mail.error_message,
        "lastUpdated": format_instant(mail.last_updated),
        "attributes": serialize_attributes(mail),
        "remoteAddr": mail.remote_addr,
        "remoteHost": mail.remote_host,
        "perRecipientHeaders": headers_to_json(mail.per_recipient_headers),
        "headerBlobId": mail.content.header_blob_id,
        "bodyBlobId": mail.content.body_blob_id,
    }


def serialize_reference(ref: MailReference) -> bytes:
    return json.dumps(reference_to_dict(ref), separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _address(value: Any, field: str) -> MailAddress:
    if not isinstance(value, str):
        raise SerializationError(f"{field}: expected an address string, got {value!r}")
    try:
        return MailAddress.of(value)
    except InvalidAddress as exc:
        raise SerializationError(f"{field}: {exc}") from exc


def _optional_str(doc: dict[str, Any], field: str) -> str | None:
    value = doc.get(field)
    if value is not None and not isinstance(value, str):
        raise SerializationError(f"{field}: expected a string or null, got {value!r}")
    return value


def reference_from_dict(doc: Any, size: int = 0) -> MailReference:
    """The reference in ``doc``; ``size`` (not part of James's format) goes into the MailContent."""
    if not isinstance(doc, dict):
        raise SerializationError(f"a mail reference must be a JSON object, got {type(doc).__name__}")
    missing = [f for f in _REQUIRED if doc.get(f) is None]
    if missing:
        raise SerializationError(f"mail reference lacks {', '.join(missing)}")
    try:
        enqueue_id = uuid.UUID(str(doc["enqueueId"]))
    except ValueError as exc:
        raise SerializationError(f"enqueueId is not a UUID: {doc['enqueueId']!r}") from exc
    recipients = doc["recipients"]
    if not isinstance(recipients, list):
        raise SerializationError(f"recipients must be a list, got {recipients!r}")
    sender = doc.get("sender")
    name, header, body = (_optional_str(doc, f) for f in ("name", "headerBlobId", "bodyBlobId"))
    attributes = doc.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise SerializationError(f"attributes must be an object, got {attributes!r}")
    last_updated = doc.get("lastUpdated")
    mail = Mail(
        name=name or "",
        sender=_address(sender, "sender") if sender not in (None, "", "<>") else None,
        recipients=[_address(r, "recipients") for r in recipients],
        content=MailContent.of_blobs(header or "", body or "", size),
        state=_optional_str(doc, "state") or "root",
        error_message=_optional_str(doc, "errorMessage"),
        attributes=deserialize_attributes(attributes),
        remote_host=_optional_str(doc, "remoteHost") or "localhost",
        remote_addr=_optional_str(doc, "remoteAddr") or "127.0.0.1",
        last_updated=parse_instant(last_updated) if last_updated is not None else datetime.now(UTC),
        per_recipient_headers=headers_from_json(doc.get("perRecipientHeaders")),
    )
    return MailReference(enqueue_id, mail)


def deserialize_reference(data: bytes | str, size: int = 0) -> MailReference:
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SerializationError(f"mail reference is not JSON: {exc}") from exc
    return reference_from_dict(doc, size)
