"""Message metadata as the mailbox layer stores it in imapUidTable / messageIdTable / messageV3."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId, ThreadId


@dataclass(frozen=True)
class Attachment:
    id: str
    name: str | None
    cid: str | None
    is_inline: bool
    blob_id: str
    content_type: str
    size: int


@dataclass(frozen=True)
class MessageContent:
    """Mailbox-independent part (``messageV3``): dates, sizes, blob ids."""

    message_id: MessageId
    internal_date: datetime
    body_start_octet: int
    full_content_octets: int
    header_blob_id: str
    body_blob_id: str
    attachments: tuple[Attachment, ...] = ()

    @property
    def body_octets(self) -> int:
        return self.full_content_octets - self.body_start_octet


@dataclass(frozen=True)
class ComposedMessageId:
    mailbox_id: MailboxId
    message_id: MessageId
    uid: int


@dataclass(frozen=True)
class MessageMetadata:
    """One message in one mailbox: the row of imapUidTable and messageIdTable."""

    mailbox_id: MailboxId
    message_id: MessageId
    uid: int
    mod_seq: int
    flags: Flags
    thread_id: ThreadId
    internal_date: datetime
    save_date: datetime | None
    body_start_octet: int
    size: int
    header_blob_id: str

    @property
    def composed_id(self) -> ComposedMessageId:
        return ComposedMessageId(self.mailbox_id, self.message_id, self.uid)

    def with_flags(self, flags: Flags, mod_seq: int) -> MessageMetadata:
        return replace(self, flags=flags, mod_seq=mod_seq)

    def to_event_json(self) -> dict:
        """James's MessageMetaData event encoding."""
        data = {"uid": self.uid, "modSeq": self.mod_seq, "flags": self.flags.to_json(), "size": self.size,
                "internalDate": _iso(self.internal_date), "messageId": str(self.message_id),
                "threadId": str(self.thread_id)}
        if self.save_date is not None:
            data["saveDate"] = _iso(self.save_date)
        return data


def _iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")
