"""Changing the mailboxes of an Email (``mailboxIds`` in ``Email/set``) through the mailbox manager:
a mailbox left for another is a move, a mailbox added a copy, a mailbox left alone an expunge."""

from __future__ import annotations

from typing import Any

from mailserver.jmap.methods.user_messages import UserEmail, UserMessages
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.ids import MailboxId

MAILBOX_PATCH = "mailboxIds/"


class MailboxChangeError(ValueError):
    """The new mailboxes are not acceptable (``invalidProperties`` on ``mailboxIds``)."""


def wanted_mailboxes(email: UserEmail, patch: dict[str, Any], messages: UserMessages) -> set[MailboxId]:
    """The mailboxes the email is to be in, from ``mailboxIds`` whole or ``mailboxIds/<id>`` patches."""
    if "mailboxIds" in patch:
        whole = patch["mailboxIds"]
        if not isinstance(whole, dict) or not all(v is True for v in whole.values()):
            raise MailboxChangeError("mailboxIds maps mailbox ids to true")
        names = set(whole)
    else:
        names = {str(c.mailbox_id) for c in email.copies}
        for path, value in patch.items():
            if not path.startswith(MAILBOX_PATCH):
                continue
            named = path[len(MAILBOX_PATCH):]
            if value is True:
                names.add(named)
            elif value is None:
                names.discard(named)
            else:
                raise MailboxChangeError(f"{path} must be true or null")
    wanted = set()
    for name in names:
        mailbox = messages.mailbox(name)
        if mailbox is None:
            raise MailboxChangeError(f"no mailbox {name}")
        wanted.add(mailbox.id)
    if not wanted:
        raise MailboxChangeError("an email is in at least one mailbox")
    return wanted


def change_mailboxes(manager: MailboxManager, messages: UserMessages, email: UserEmail,
                     wanted: set[MailboxId]) -> None:
    held = {c.mailbox_id: c for c in email.copies}
    leaving = [held[m] for m in held if m not in wanted]
    joining = [m for m in wanted if m not in held]
    source = email.first
    for target in joining:   # a move where a mailbox is left, a copy for the rest
        target_path = messages.mailboxes[target].path
        if leaving:
            moved = leaving.pop()
            manager.move(messages.mailboxes[moved.mailbox_id].path, target_path, [moved.uid])
        else:
            manager.copy(messages.mailboxes[source.mailbox_id].path, target_path, [source.uid])
    for copy in leaving:   # left without a replacement: expunged from that mailbox only
        path = messages.mailboxes[copy.mailbox_id].path
        manager.set_flags(path, Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, [copy.uid])
        manager.expunge(path, [copy.uid])
