"""Message metadata as the mailbox layer stores it in imapUidTable / messageIdTable / messageV3."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId, ThreadId
from mailserver.model.jsonvalues import Fields, as_utc, format_instant, whole_milliseconds


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

    def __post_init__(self) -> None:
        # James's column holds a Java Date: the value this node holds and publishes is the one stored.
        object.__setattr__(self, "internal_date", whole_milliseconds(self.internal_date))

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

    def __post_init__(self) -> None:
        # internalDate and save_date are Java Dates in James (milliseconds): what this node holds, returns
        # and publishes in events equals what any node, ours or James's, reads back from Cassandra.
        # Read from Cassandra they are whole already: only a finer value is rewritten.
        if self.internal_date.microsecond % 1000:
            object.__setattr__(self, "internal_date", whole_milliseconds(self.internal_date))
        if self.save_date is not None and self.save_date.microsecond % 1000:
            object.__setattr__(self, "save_date", whole_milliseconds(self.save_date))

    @property
    def composed_id(self) -> ComposedMessageId:
        return ComposedMessageId(self.mailbox_id, self.message_id, self.uid)

    def with_flags(self, flags: Flags, mod_seq: int) -> MessageMetadata:
        return replace(self, flags=flags, mod_seq=mod_seq)

    def for_event(self) -> EventMessageMetadata:
        return EventMessageMetadata(uid=self.uid, mod_seq=self.mod_seq, flags=self.flags, size=self.size,
                                    internal_date=self.internal_date, save_date=self.save_date,
                                    message_id=self.message_id, thread_id=self.thread_id)


@dataclass(frozen=True, kw_only=True)
class EventMessageMetadata:
    """One message of an Added or Expunged event: what James's event JSON carries, nothing more.

    The mailbox is the event's; blob ids and offsets stay in the store. Dates are aware UTC so
    that an event read back from JSON equals the one written.
    """

    uid: int
    mod_seq: int
    flags: Flags
    size: int
    internal_date: datetime
    message_id: MessageId
    thread_id: ThreadId
    save_date: datetime | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "internal_date", as_utc(self.internal_date))
        if self.save_date is not None:
            object.__setattr__(self, "save_date", as_utc(self.save_date))

    def to_json(self) -> dict[str, Any]:
        """James's field order: uid, modSeq, flags, size, internalDate, saveDate?, messageId, threadId."""
        data: dict[str, Any] = {"uid": self.uid, "modSeq": self.mod_seq, "flags": self.flags.to_json(),
                                "size": self.size, "internalDate": format_instant(self.internal_date)}
        if self.save_date is not None:
            data["saveDate"] = format_instant(self.save_date)
        data["messageId"] = str(self.message_id)
        data["threadId"] = str(self.thread_id)
        return data

    @classmethod
    def from_json(cls, data: Any, where: str = "metadata") -> EventMessageMetadata:
        """A missing threadId is the message id, a missing saveDate none, as James reads old events."""
        fields = Fields(data, where)
        message_id = MessageId.of(fields.text("messageId"))
        thread_id = MessageId.of(fields.text("threadId")) if fields.has("threadId") else message_id
        return cls(uid=fields.integer("uid"), mod_seq=fields.integer("modSeq"),
                   flags=Flags.from_json(fields.raw("flags")), size=fields.integer("size"),
                   internal_date=fields.instant("internalDate"), save_date=fields.instant("saveDate", None),
                   message_id=message_id, thread_id=thread_id)
