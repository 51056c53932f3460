"""The header convenience properties of an Email (RFC 8621 4.1.2-4.1.3), parsed from its header only."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from email import policy
from email.headerregistry import Address, Group
from email.message import EmailMessage
from email.parser import BytesHeaderParser
from email.utils import parsedate_to_datetime
from typing import Any

ADDRESS_FIELDS = {"from": "From", "to": "To", "cc": "Cc", "bcc": "Bcc", "replyTo": "Reply-To", "sender": "Sender"}
ID_FIELDS = {"messageId": "Message-ID", "inReplyTo": "In-Reply-To", "references": "References"}
HEADER_PROPERTIES = frozenset({*ADDRESS_FIELDS, *ID_FIELDS, "subject", "sentAt"})
MESSAGE_ID = re.compile(r"<([^<>\s]+)>")


def parse_header(raw: bytes) -> EmailMessage:
    message = BytesHeaderParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)   # policy.default builds EmailMessage
    return message


def header_properties(header: EmailMessage, wanted: set[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for prop in wanted & HEADER_PROPERTIES:
        if prop in ADDRESS_FIELDS:
            values[prop] = addresses(header, ADDRESS_FIELDS[prop])
        elif prop in ID_FIELDS:
            values[prop] = message_ids(header, ID_FIELDS[prop])
        elif prop == "subject":
            values[prop] = _text(header, "Subject")
        else:
            values[prop] = sent_at(header)
    return values


def _text(header: EmailMessage, name: str) -> str | None:
    try:
        value = header.get(name)
    except Exception:   # a malformed field reads as absent, as for any hostile header
        return None
    return None if value is None else " ".join(str(value).split())


def addresses(header: EmailMessage, name: str) -> list[dict[str, Any]] | None:
    """``[{name, email}]`` of every address in the field (groups flattened), or null when absent."""
    try:
        field = header.get(name)
        groups: tuple[Group, ...] = field.groups if field is not None else ()
    except Exception:
        return None
    if field is None:
        return None
    found: list[Address] = [a for group in groups for a in group.addresses]
    return [{"name": a.display_name or None, "email": a.addr_spec} for a in found]


def message_ids(header: EmailMessage, name: str) -> list[str] | None:
    raw = header.get(name)
    if raw is None:
        return None
    ids = MESSAGE_ID.findall(str(raw))
    return ids or None


def sent_at(header: EmailMessage) -> str | None:
    raw = _text(header, "Date")
    if raw is None:
        return None
    try:
        date = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return date.isoformat() if date.tzinfo is not None else None


def utc_date(moment: datetime) -> str:
    """``UTCDate`` (RFC 8620 1.4): RFC 3339 in UTC with ``Z``; a naive date is UTC (as Cassandra returns it)."""
    return as_utc(moment).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_utc(moment: datetime) -> datetime:
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).astimezone(UTC)
