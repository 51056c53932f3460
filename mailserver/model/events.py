"""Mailbox events and their James JSON encoding (the event type is the single top-level key).

Each class writes its fields in the order of James's DTO case class (``MailboxEventSerializer``,
play-json writes them in that order) and reads them back with ``from_body``; optional fields
default as James's reader defaults them. The wire API (text, batches, the error the bus
dead-letters on) is in ``event_json`` and re-exported here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from mailserver import randomness
from mailserver.model import acl as acl_model
from mailserver.model.address import Username
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.jsonvalues import Fields, as_utc, format_instant
from mailserver.model.mailbox import MailboxPath
from mailserver.model.message import EventMessageMetadata, MessageMetadata
from mailserver.model.quota import QuotaLimits, QuotaRoot, QuotaScope, QuotaUsage


def _event_id() -> uuid.UUID:
    return randomness.uuid4()


@dataclass(frozen=True, kw_only=True)
class MailboxEvent:
    """``session_id`` travels only on the types James gives one (``has_session_id``)."""

    type_name: ClassVar[str] = ""
    has_session_id: ClassVar[bool] = True
    user: Username
    session_id: int = 0
    event_id: uuid.UUID = field(default_factory=_event_id)

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        raise NotImplementedError

    def to_json(self) -> dict[str, Any]:
        return {self.type_name: self.body()}

    def _head(self) -> dict[str, Any]:
        """eventId, sessionId, user: how most of James's DTOs begin."""
        return {"eventId": str(self.event_id), "sessionId": self.session_id, "user": str(self.user)}

    @classmethod
    def _common(cls, f: Fields, user_key: str = "user") -> dict[str, Any]:
        common: dict[str, Any] = {"event_id": f.uuid("eventId"), "user": Username.of(f.text(user_key))}
        if cls.has_session_id:
            common["session_id"] = f.integer("sessionId")
        return common


def _acl_to_json(acl: Mapping[str, str]) -> dict[str, str]:
    # James writes rights in its Right enum order, which is alphabetical ("ar", not "ra").
    return {key: "".join(sorted(rights)) for key, rights in acl.items()}


def _acl_from_json(f: Fields) -> dict[str, str]:
    acl = {}
    for key, rights in f.data.items():
        if not isinstance(rights, str):
            raise ValueError(f"{f.where}: the rights of {key!r} must be a string")
        acl[acl_model.validate_key(key)] = acl_model.validate_rights(rights)  # our canonical order
    return acl


@dataclass(frozen=True, kw_only=True)
class _MailboxPathEvent(MailboxEvent):
    """A mailbox named by ``mailboxPath`` and ``mailboxId``: the DTOs of a mailbox's creation and (un)subscription."""

    path: MailboxPath
    mailbox_id: MailboxId

    def body(self) -> dict[str, Any]:
        return {"eventId": str(self.event_id), "mailboxPath": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                "user": str(self.user), "sessionId": self.session_id}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("mailboxPath"), "mailboxPath"),
                   mailbox_id=MailboxId.of(f.text("mailboxId")))


@dataclass(frozen=True, kw_only=True)
class MailboxAdded(_MailboxPathEvent):
    type_name: ClassVar[str] = "MailboxAdded"


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
        return {**self._head(), "path": self.path.to_json(), "mailboxACL": {"entries": _acl_to_json(self.acl)},
                "quotaRoot": self.quota_root.to_json(), "deletedMessageCount": self.deleted_message_count,
                "totalDeletedSize": self.total_deleted_size, "mailboxId": str(self.mailbox_id)}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        acl = _acl_from_json(f.obj("mailboxACL").obj("entries")) if f.has("mailboxACL") else {}  # optional in James
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("path")), acl=acl,
                   quota_root=QuotaRoot.from_json(f.text("quotaRoot")),
                   deleted_message_count=f.integer("deletedMessageCount"),
                   total_deleted_size=f.integer("totalDeletedSize"), mailbox_id=MailboxId.of(f.text("mailboxId")))


@dataclass(frozen=True, kw_only=True)
class MailboxRenamed(MailboxEvent):
    type_name: ClassVar[str] = "MailboxRenamed"
    path: MailboxPath
    new_path: MailboxPath
    mailbox_id: MailboxId

    def body(self) -> dict[str, Any]:
        return {**self._head(), "path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                "newPath": self.new_path.to_json()}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("path")),
                   mailbox_id=MailboxId.of(f.text("mailboxId")),
                   new_path=MailboxPath.from_json(f.raw("newPath"), "newPath"))


@dataclass(frozen=True, kw_only=True)
class MailboxACLUpdated(MailboxEvent):
    """The whole ACL before and after the change, as James's ``ACLDiff`` carries it."""

    type_name: ClassVar[str] = "MailboxACLUpdated"
    path: MailboxPath
    mailbox_id: MailboxId
    old_acl: dict[str, str] = field(default_factory=dict)
    new_acl: dict[str, str] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        return {**self._head(), "mailboxPath": self.path.to_json(),
                "aclDiff": {"oldACL": _acl_to_json(self.old_acl), "newACL": _acl_to_json(self.new_acl)},
                "mailboxId": str(self.mailbox_id)}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        diff = f.obj("aclDiff")
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("mailboxPath"), "mailboxPath"),
                   old_acl=_acl_from_json(diff.obj("oldACL")), new_acl=_acl_from_json(diff.obj("newACL")),
                   mailbox_id=MailboxId.of(f.text("mailboxId")))

    def changes(self) -> tuple[dict[str, str], dict[str, str]]:
        """(entries added or changed with their new rights, entries removed or changed with their old rights)."""
        return acl_model.diff(self.old_acl, self.new_acl)


def _for_event(items: tuple[MessageMetadata | EventMessageMetadata, ...]) -> tuple[EventMessageMetadata, ...]:
    return tuple(m.for_event() if isinstance(m, MessageMetadata) else m for m in items)


def _metadata_to_json(items: tuple[EventMessageMetadata, ...]) -> dict[str, Any]:
    return {str(m.uid): m.to_json() for m in items}


def _metadata_from_json(f: Fields) -> tuple[EventMessageMetadata, ...]:
    for key in f.data:
        if not (key.isascii() and key.isdigit()):
            raise ValueError(f"{f.where}: key {key!r} is not a uid")
    return tuple(EventMessageMetadata.from_json(v, f"{f.where}.{k}") for k, v in f.data.items())


@dataclass(frozen=True, kw_only=True)
class Added(MailboxEvent):
    """``added`` may be given as stored ``MessageMetadata``: the event keeps what travels on the wire only,
    so in-process listeners see exactly what listeners fed by RabbitMQ see."""

    type_name: ClassVar[str] = "Added"
    path: MailboxPath
    mailbox_id: MailboxId
    added: tuple[EventMessageMetadata, ...]
    is_delivery: bool = False
    is_appended: bool = True
    moved_from: MailboxId | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "added", _for_event(self.added))

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self._head(), "path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                                "added": _metadata_to_json(self.added), "isDelivery": self.is_delivery,
                                "isAppended": self.is_appended}
        if self.moved_from is not None:
            data["movedFromMailboxId"] = str(self.moved_from)
        return data

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        moved_from = MailboxId.of(f.text("movedFromMailboxId")) if f.has("movedFromMailboxId") else None
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("path")),
                   mailbox_id=MailboxId.of(f.text("mailboxId")), added=_metadata_from_json(f.obj("added")),
                   is_delivery=f.boolean("isDelivery", False), is_appended=f.boolean("isAppended", True),
                   moved_from=moved_from)


@dataclass(frozen=True, kw_only=True)
class Expunged(MailboxEvent):
    type_name: ClassVar[str] = "Expunged"
    path: MailboxPath
    mailbox_id: MailboxId
    expunged: tuple[EventMessageMetadata, ...]
    moved_to: MailboxId | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "expunged", _for_event(self.expunged))

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {**self._head(), "path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                                "expunged": _metadata_to_json(self.expunged)}
        if self.moved_to is not None:
            data["movedToMailboxId"] = str(self.moved_to)
        return data

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        moved_to = MailboxId.of(f.text("movedToMailboxId")) if f.has("movedToMailboxId") else None
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("path")),
                   mailbox_id=MailboxId.of(f.text("mailboxId")), expunged=_metadata_from_json(f.obj("expunged")),
                   moved_to=moved_to)


@dataclass(frozen=True)
class UpdatedFlags:
    uid: int
    mod_seq: int
    old_flags: Flags
    new_flags: Flags
    message_id: MessageId | None = None
    internal_date: datetime | None = None

    def __post_init__(self) -> None:
        if self.internal_date is not None:
            object.__setattr__(self, "internal_date", as_utc(self.internal_date))

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"uid": self.uid}
        if self.message_id is not None:
            data["messageId"] = str(self.message_id)
        data.update(modSeq=self.mod_seq, oldFlags=self.old_flags.to_json(), newFlags=self.new_flags.to_json())
        if self.internal_date is not None:
            data["internalDate"] = format_instant(self.internal_date)
        return data

    @classmethod
    def from_json(cls, data: Any, where: str = "updatedFlags") -> UpdatedFlags:
        f = Fields(data, where)
        return cls(uid=f.integer("uid"), mod_seq=f.integer("modSeq"), old_flags=Flags.from_json(f.raw("oldFlags")),
                   new_flags=Flags.from_json(f.raw("newFlags")),
                   message_id=MessageId.of(f.text("messageId")) if f.has("messageId") else None,
                   internal_date=f.instant("internalDate", None))


@dataclass(frozen=True, kw_only=True)
class FlagsUpdated(MailboxEvent):
    type_name: ClassVar[str] = "FlagsUpdated"
    path: MailboxPath
    mailbox_id: MailboxId
    updated: tuple[UpdatedFlags, ...]

    def body(self) -> dict[str, Any]:
        return {**self._head(), "path": self.path.to_json(), "mailboxId": str(self.mailbox_id),
                "updatedFlags": [u.to_json() for u in self.updated]}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        updated = tuple(UpdatedFlags.from_json(u, f"updatedFlags[{i}]") for i, u in enumerate(f.items("updatedFlags")))
        return cls(**cls._common(f), path=MailboxPath.from_json(f.raw("path")),
                   mailbox_id=MailboxId.of(f.text("mailboxId")), updated=updated)


@dataclass(frozen=True, kw_only=True)
class MessageMoveEvent(MailboxEvent):
    type_name: ClassVar[str] = "MessageMoveEvent"
    has_session_id: ClassVar[bool] = False
    previous_mailbox_ids: tuple[MailboxId, ...]
    target_mailbox_ids: tuple[MailboxId, ...]
    message_ids: tuple[MessageId, ...]

    def body(self) -> dict[str, Any]:
        return {"eventId": str(self.event_id), "user": str(self.user),
                "previousMailboxIds": [str(m) for m in self.previous_mailbox_ids],
                "targetMailboxIds": [str(m) for m in self.target_mailbox_ids],
                "messageIds": [str(m) for m in self.message_ids]}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        return cls(**cls._common(f),
                   previous_mailbox_ids=tuple(MailboxId.of(v) for v in f.texts("previousMailboxIds")),
                   target_mailbox_ids=tuple(MailboxId.of(v) for v in f.texts("targetMailboxIds")),
                   message_ids=tuple(MessageId.of(v) for v in f.texts("messageIds")))


def _limit(value: int | None) -> int | None:
    return None if value is None or value < 0 else value  # James writes null for unlimited, -1 included


def _quota_to_json(used: int, limit: int | None, by_scope: Mapping[QuotaScope, int | None]) -> dict[str, Any]:
    return {"used": used, "limit": _limit(limit),
            "limits": {scope.event_name: _limit(value) for scope, value in by_scope.items()}}


def _quota_from_json(f: Fields) -> tuple[int, int | None, dict[QuotaScope, int | None]]:
    if "limit" not in f.data:  # required by James, null meaning unlimited
        raise ValueError(f"{f.where}: field 'limit' is missing")
    limit = None if f.data["limit"] is None else f.integer("limit")
    by_scope: dict[QuotaScope, int | None] = {}
    if f.has("limits"):
        limits = f.obj("limits")
        for name in limits.data:
            by_scope[QuotaScope.from_event_name(name)] = None if limits.data[name] is None else limits.integer(name)
    return f.integer("used"), limit, by_scope


@dataclass(frozen=True, kw_only=True)
class QuotaUsageUpdatedEvent(MailboxEvent):
    """Usage and effective limits of a quota root, plus the limit defined at each scope (James's ``limits``).

    ``count_limits`` / ``size_limits`` map a scope to its limit (None: unlimited at that scope); a
    scope that defines nothing is absent. Unlimited is always None here (-1 is normalised).
    """

    type_name: ClassVar[str] = "QuotaUsageUpdatedEvent"
    has_session_id: ClassVar[bool] = False
    quota_root: QuotaRoot
    usage: QuotaUsage
    limits: QuotaLimits
    count_limits: dict[QuotaScope, int | None] = field(default_factory=dict)
    size_limits: dict[QuotaScope, int | None] = field(default_factory=dict)
    time: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        object.__setattr__(self, "limits", QuotaLimits(_limit(self.limits.count), _limit(self.limits.size)))
        object.__setattr__(self, "count_limits", {s: _limit(v) for s, v in self.count_limits.items()})
        object.__setattr__(self, "size_limits", {s: _limit(v) for s, v in self.size_limits.items()})
        object.__setattr__(self, "time", as_utc(self.time))

    def body(self) -> dict[str, Any]:
        return {"eventId": str(self.event_id), "user": str(self.user), "quotaRoot": self.quota_root.to_json(),
                "countQuota": _quota_to_json(self.usage.count, self.limits.count, self.count_limits),
                "sizeQuota": _quota_to_json(self.usage.size, self.limits.size, self.size_limits),
                "time": format_instant(self.time)}

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        count_used, count_limit, count_limits = _quota_from_json(f.obj("countQuota"))
        size_used, size_limit, size_limits = _quota_from_json(f.obj("sizeQuota"))
        return cls(**cls._common(f), quota_root=QuotaRoot.from_json(f.text("quotaRoot")),
                   usage=QuotaUsage(count_used, size_used), limits=QuotaLimits(count_limit, size_limit),
                   count_limits=count_limits, size_limits=size_limits, time=f.instant("time"))


@dataclass(frozen=True, kw_only=True)
class MailboxSubscribedEvent(_MailboxPathEvent):
    type_name: ClassVar[str] = "MailboxSubscribedEvent"


@dataclass(frozen=True, kw_only=True)
class MailboxUnSubscribedEvent(_MailboxPathEvent):
    type_name: ClassVar[str] = "MailboxUnSubscribedEvent"  # sic: James's DTO name has a capital S


@dataclass(frozen=True, kw_only=True)
class MessageContentDeletionEvent(MailboxEvent):
    """Content deletion bus (ADR 0074): what the vault and the blob cleanup need once no mailbox
    references a message. ``user`` travels as ``username``; ``mailbox_path`` is James's string form."""

    type_name: ClassVar[str] = "MessageContentDeletionEvent"
    has_session_id: ClassVar[bool] = False
    mailbox_id: MailboxId
    message_id: MessageId
    size: int
    internal_date: datetime
    has_attachments: bool
    body_blob_id: str
    acl: dict[str, str] = field(default_factory=dict)
    flags: Flags = field(default_factory=Flags)
    header_blob_id: str | None = None
    header_content: str | None = None
    mailbox_path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "internal_date", as_utc(self.internal_date))

    def body(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "eventId": str(self.event_id), "username": str(self.user), "mailboxId": str(self.mailbox_id),
            "mailboxACL": {"entries": _acl_to_json(self.acl)}, "messageId": str(self.message_id), "size": self.size,
            "internalDate": format_instant(self.internal_date), "flags": self.flags.to_json(),
            "hasAttachments": self.has_attachments}
        if self.header_blob_id is not None:
            data["headerBlobId"] = self.header_blob_id
        if self.header_content is not None:
            data["headerContent"] = self.header_content
        data["bodyBlobId"] = self.body_blob_id
        if self.mailbox_path is not None:
            data["mailboxPath"] = self.mailbox_path
        return data

    @classmethod
    def from_body(cls, f: Fields) -> MailboxEvent:
        acl = _acl_from_json(f.obj("mailboxACL").obj("entries")) if f.has("mailboxACL") else {}
        flags = Flags.from_json(f.raw("flags")) if f.has("flags") else Flags()
        return cls(**cls._common(f, "username"), mailbox_id=MailboxId.of(f.text("mailboxId")), acl=acl,
                   message_id=MessageId.of(f.text("messageId")), size=f.integer("size"),
                   internal_date=f.instant("internalDate"), flags=flags, has_attachments=f.boolean("hasAttachments"),
                   header_blob_id=f.text("headerBlobId", None), header_content=f.text("headerContent", None),
                   body_blob_id=f.text("bodyBlobId"), mailbox_path=f.text("mailboxPath", None))


EVENT_TYPES: dict[str, type[MailboxEvent]] = {cls.type_name: cls for cls in (
    MailboxAdded, MailboxDeletion, MailboxRenamed, MailboxACLUpdated, Added, Expunged, FlagsUpdated,
    MessageMoveEvent, QuotaUsageUpdatedEvent, MailboxSubscribedEvent, MailboxUnSubscribedEvent,
    MessageContentDeletionEvent)}

_WIRE_API = ("EventDeserializationError", "event_from_json", "event_to_json", "serialize_event", "serialize_events",
             "deserialize_event", "deserialize_events")


def __getattr__(name: str) -> Any:
    """Re-exports the wire API of ``event_json`` lazily: that module imports this one."""
    if name in _WIRE_API:
        from mailserver.model import event_json

        return getattr(event_json, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
