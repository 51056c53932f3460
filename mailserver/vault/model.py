"""A deleted message and where its content lies, with James's JSON (the ``payload`` column).

James's ``DeletedMessageWithStorageInformationDTO``: ``{"deletedMessage": {...}, "storageInformation":
{"bucketName", "blobId"}}``. Dates are Java's ``ISO_ZONED_DATE_TIME`` of a UTC ``ZonedDateTime``
(``2024-03-30T14:12:00.12Z``: fraction digits only as needed), the null sender is ``<>``, and an
absent subject is left out (Jackson ``NON_ABSENT``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mailserver.model.address import MailAddress, Username
from mailserver.model.ids import MailboxId, MessageId

NULL_SENDER = "<>"
_ZONE_REGION = re.compile(r"\[[^\]]*\]$")
_FRACTION = re.compile(r"(\.\d{6})\d+")


def format_zoned(value: datetime) -> str:
    """Java's ``ISO_ZONED_DATE_TIME`` of a UTC instant: seconds always, fraction without trailing zeros."""
    value = value.astimezone(UTC)
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    return text + "Z"


def parse_zoned(raw: str) -> datetime:
    """An ISO-8601 date with an offset (``Z``, ``+02:00``, optional ``[Region]``); ValueError otherwise."""
    text = _FRACTION.sub(r"\1", _ZONE_REGION.sub("", raw.strip()))   # Java prints up to nanoseconds
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError(f"date without an offset: {raw!r}")
    return value.astimezone(UTC)


@dataclass(frozen=True)
class DeletedMessage:
    """James's ``DeletedMessage``: what the vault knows about a message without reading its content."""

    message_id: MessageId
    origin_mailboxes: tuple[MailboxId, ...]
    owner: Username
    delivery_date: datetime
    deletion_date: datetime
    sender: MailAddress | None           # None: the null sender
    recipients: tuple[MailAddress, ...]
    subject: str | None
    has_attachment: bool
    size: int

    def to_json(self) -> dict[str, Any]:
        """The ``deletedMessage`` object of the payload."""
        body: dict[str, Any] = {
            "messageId": str(self.message_id),
            "originMailboxes": [str(m) for m in self.origin_mailboxes],
            "owner": self.owner.value,
            "deliveryDate": format_zoned(self.delivery_date),
            "deletionDate": format_zoned(self.deletion_date),
            "sender": str(self.sender) if self.sender else NULL_SENDER,
            "recipients": [str(r) for r in self.recipients],
        }
        if self.subject is not None:
            body["subject"] = self.subject
        body["hasAttachment"] = self.has_attachment
        body["size"] = self.size
        return body

    def descriptor(self) -> dict[str, Any]:
        """The WebAdmin browse entry (James's ``DeletedMessageDTO``: absent sender/subject as null)."""
        body = self.to_json()
        body["sender"] = str(self.sender) if self.sender else None
        body["subject"] = self.subject
        return body

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> DeletedMessage:
        sender = body.get("sender")
        return cls(
            message_id=MessageId.of(body["messageId"]),
            origin_mailboxes=tuple(MailboxId.of(m) for m in body["originMailboxes"]),
            owner=Username.of(body["owner"]),
            delivery_date=parse_zoned(body["deliveryDate"]),
            deletion_date=parse_zoned(body["deletionDate"]),
            sender=None if not sender or sender.strip() == NULL_SENDER else MailAddress.of(sender),
            recipients=tuple(MailAddress.of(r) for r in body["recipients"]),
            subject=body.get("subject"),
            has_attachment=bool(body["hasAttachment"]),
            size=int(body["size"]),
        )


@dataclass(frozen=True)
class StorageInformation:
    bucket_name: str
    blob_id: str

    def to_json(self) -> dict[str, str]:
        return {"bucketName": self.bucket_name, "blobId": self.blob_id}


@dataclass(frozen=True)
class StoredDeletedMessage:
    """A vault entry: the message's metadata and its content's place (James's DeletedMessageWithStorageInformation)."""

    message: DeletedMessage
    storage: StorageInformation = field(compare=True)

    def payload(self) -> str:
        return json.dumps({"deletedMessage": self.message.to_json(), "storageInformation": self.storage.to_json()},
                          separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_payload(cls, payload: str) -> StoredDeletedMessage:
        """ValueError (or KeyError) on a payload that is not James's shape."""
        body = json.loads(payload)
        storage = body["storageInformation"]
        return cls(DeletedMessage.from_json(body["deletedMessage"]),
                   StorageInformation(storage["bucketName"], storage["blobId"]))
