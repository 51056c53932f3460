"""Mailbox events and their James JSON encoding (the event type is the single top-level key)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from mailserver.model.address import Username
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.mailbox import MailboxPath
from mailserver.model.message import MessageMetadata
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaUsage


def _event_id() -> uuid.UUID:
    return uuid.uuid4()


@dataclass(frozen=True, kw_only=True)
class MailboxEvent:
    type_name: ClassVar[str] = ""
    has_session_id: ClassVar[bool] = True   # James's quota event has none
    user: Username
    session_id: int = 0
    event_id: uuid.UUID = field(default_factory=_event_id)

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        envelope: dict[str, Any] = {"eventId": str(self.event_id), "user": str(self.user)}
        if self.has_session_id:
            envelope["sessionId"] = self.session_id
        return {self.type_name: {**envelope, **self.body()}}


@dataclass(frozen=True, kw_only=True)
class MailboxAdded(MailboxEvent):
    type_name: ClassVar[str] = "MailboxAdded"
    path: MailboxPath
    mailbox_id: MailboxId

    def body(self) -> dict[str, Any]:
        return {"mailboxPath": self.path.to_json(), "mailboxId": str(self.mailbox_id)}


@dataclass(frozen=True, kw_only=True)
class MailboxDeletion(MailboxEvent):
    type_name: ClassVar[str] = "MailboxDeletion"
    path: MailboxPath
    mailbox_id: MailboxId
    quota_root: QuotaRoot
    deleted_message_count: int
    total_deleted_size: int
    acl: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                "mailboxACL": {"entries": dict(self.acl)}, "quotaRoot": self.quota_root.value,
                "deletedMessageCount": self.deleted_message_count, "totalDeletedSize": self.total_deleted_size}


@dataclass(frozen=True, kw_only=True)
class MailboxRenamed(MailboxEvent):
    type_name: ClassVar[str] = "MailboxRenamed"
    path: MailboxPath
    new_path: MailboxPath
    mailbox_id: MailboxId

    def body(self) -> dict[str, Any]:
        return {"path": self.path.to_json(), "newPath": self.new_path.to_json(), "mailboxId": str(self.mailbox_id)}


@dataclass(frozen=True, kw_only=True)
class MailboxACLUpdated(MailboxEvent):
    type_name: ClassVar[str] = "MailboxACLUpdated"
    path: MailboxPath
    mailbox_id: MailboxId
    added: dict[str, str] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {"mailboxPath": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                "aclDiff": {"oldACL": {"entries": dict(self.removed)}, "newACL": {"entries": dict(self.added)}}}


@dataclass(frozen=True, kw_only=True)
class Added(MailboxEvent):
    type_name: ClassVar[str] = "Added"
    path: MailboxPath
    mailbox_id: MailboxId
    added: tuple[MessageMetadata, ...]
    is_delivery: bool = False
    is_appended: bool = True
    moved_from: MailboxId | None = None

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
            "added": {str(m.uid): m.to_event_json() for m in self.added},
            "isDelivery": self.is_delivery, "isAppended": self.is_appended}
        if self.moved_from is not None:
            data["movedFromMailboxId"] = str(self.moved_from)
        return data


@dataclass(frozen=True, kw_only=True)
class Expunged(MailboxEvent):
    type_name: ClassVar[str] = "Expunged"
    path: MailboxPath
    mailbox_id: MailboxId
    expunged: tuple[MessageMetadata, ...]
    moved_to: MailboxId | None = None

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                                "expunged": {str(m.uid): m.to_event_json() for m in self.expunged}}
        if self.moved_to is not None:
            data["movedToMailboxId"] = str(self.moved_to)
        return data


@dataclass(frozen=True)
class UpdatedFlags:
    uid: int
    mod_seq: int
    old_flags: Flags
    new_flags: Flags
    message_id: MessageId | None = None

    def to_json(self) -> dict[str, Any]:
        return {"uid": self.uid, "modSeq": self.mod_seq, "oldFlags": self.old_flags.to_json(),
                "newFlags": self.new_flags.to_json()}


@dataclass(frozen=True, kw_only=True)
class FlagsUpdated(MailboxEvent):
    type_name: ClassVar[str] = "FlagsUpdated"
    path: MailboxPath
    mailbox_id: MailboxId
    updated: tuple[UpdatedFlags, ...]

    def body(self) -> dict[str, Any]:
        return {"path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                "updatedFlags": [u.to_json() for u in self.updated]}


@dataclass(frozen=True, kw_only=True)
class MessageMoveEvent(MailboxEvent):
    type_name: ClassVar[str] = "MessageMoveEvent"
    previous_mailbox_ids: tuple[MailboxId, ...]
    target_mailbox_ids: tuple[MailboxId, ...]
    message_ids: tuple[MessageId, ...]

    def body(self) -> dict[str, Any]:
        return {"previousMailboxIds": [str(m) for m in self.previous_mailbox_ids],
                "targetMailboxIds": [str(m) for m in self.target_mailbox_ids],
                "messageIds": [str(m) for m in self.message_ids]}


@dataclass(frozen=True, kw_only=True)
class QuotaUsageUpdatedEvent(MailboxEvent):
    type_name: ClassVar[str] = "QuotaUsageUpdatedEvent"
    has_session_id: ClassVar[bool] = False
    quota_root: QuotaRoot
    usage: QuotaUsage
    limits: QuotaLimits
    time: datetime = field(default_factory=lambda: datetime.now(UTC))

    def body(self) -> dict[str, Any]:
        return {"quotaRoot": self.quota_root.value,
                "countQuota": {"used": self.usage.count, "limit": self.limits.count},
                "sizeQuota": {"used": self.usage.size, "limit": self.limits.size},
                "time": self.time.isoformat().replace("+00:00", "Z")}
