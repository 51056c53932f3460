"""Storing a new Email (``Email/set`` create, ``Email/import``): appended to one of its mailboxes
through the mailbox manager, copied to the others, its creation id recorded for ``#`` references."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mailserver.jmap.account import CallContext
from mailserver.jmap.methods.keywords import flags_with_keywords, is_valid_keyword
from mailserver.jmap.methods.set_errors import SetError
from mailserver.jmap.methods.user_messages import UserMessages
from mailserver.mailbox.content import MalformedMessage
from mailserver.mailbox.errors import OverQuota
from mailserver.model.flags import Flags
from mailserver.model.mailbox import Mailbox


def target_mailboxes(context: CallContext, messages: UserMessages, value: Any) -> list[Mailbox]:
    """``mailboxIds``: at least one, each the user's (``#creationId`` references resolved)."""
    if not isinstance(value, dict) or not value or not all(v is True for v in value.values()):
        raise SetError("invalidProperties", "mailboxIds maps at least one mailbox id to true", ["mailboxIds"])
    found = []
    for name in value:
        mailbox = messages.mailbox(context.resolve_id(name))
        if mailbox is None:
            raise SetError("invalidProperties", f"no mailbox {name}", ["mailboxIds"])
        found.append(mailbox)
    return found


def keyword_flags(value: Any) -> Flags:
    if value is None:
        return Flags()
    if not isinstance(value, dict) or not all(v is True for v in value.values()) \
            or not all(is_valid_keyword(k) for k in value):
        raise SetError("invalidProperties", "keywords maps valid keywords to true", ["keywords"])
    return flags_with_keywords(Flags(), value)


def received_at(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str) and value.endswith("Z"):
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            pass
    raise SetError("invalidProperties", "receivedAt must be a UTCDate", ["receivedAt"])


def store(context: CallContext, messages: UserMessages, creation_id: str, raw: bytes, mailboxes: list[Mailbox],
          flags: Flags, received: datetime | None) -> dict[str, Any]:
    """The created Email's ``{id, blobId, threadId, size}`` (RFC 8621 4.6)."""
    manager = context.services.manager
    first, *others = mailboxes
    try:
        appended = manager.append(first.path, raw, internal_date=received, flags=flags)
    except OverQuota as exc:
        raise SetError("overQuota", str(exc)) from None
    except MalformedMessage as exc:
        raise SetError("invalidEmail", f"not a message: {exc}") from None
    for mailbox in others:
        manager.copy(first.path, mailbox.path, [appended.metadata.uid])
    email_id = str(appended.metadata.message_id)
    context.created_ids[creation_id] = email_id
    return {"id": email_id, "blobId": email_id, "threadId": str(appended.metadata.thread_id),
            "size": appended.size}
