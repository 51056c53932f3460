"""The user's emails: one per message id, with the mailbox copies that hold it."""

from __future__ import annotations

from dataclasses import dataclass

from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Username
from mailserver.model.flags import Flags
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.mailbox import Mailbox
from mailserver.model.message import MessageMetadata


@dataclass(frozen=True)
class UserEmail:
    """A message as JMAP sees it: its copies (one per mailbox of the user holding it)."""

    copies: tuple[MessageMetadata, ...]

    @property
    def first(self) -> MessageMetadata:
        return self.copies[0]

    @property
    def id(self) -> str:
        return str(self.first.message_id)

    @property
    def flags(self) -> Flags:
        """The flags of all its copies together (a flag set in one mailbox is on the email)."""
        return Flags(frozenset().union(*(c.flags.system for c in self.copies)),
                     frozenset().union(*(c.flags.user for c in self.copies)))


class UserMessages:
    def __init__(self, manager: MailboxManager, user: Username) -> None:
        self.manager = manager
        self.mailboxes: dict[MailboxId, Mailbox] = {m.id: m for m in manager.list_mailboxes(user)}

    def mailbox(self, mailbox_id: str) -> Mailbox | None:
        try:
            return self.mailboxes.get(MailboxId.of(mailbox_id))
        except ValueError:
            return None

    def in_mailboxes(self, mailboxes: list[Mailbox]) -> list[UserEmail]:
        copies: dict[MessageId, list[MessageMetadata]] = {}
        for mailbox in mailboxes:
            for message in self.manager.get_messages(mailbox.path):
                copies.setdefault(message.message_id, []).append(message)
        return [UserEmail(tuple(c)) for c in copies.values()]

    def find(self, email_id: str) -> UserEmail | None:
        """The email of that id if the user holds it; None for an unknown or malformed id (notFound)."""
        try:
            message_id = MessageId.of(email_id)
        except ValueError:
            return None
        copies = [m for m in self.manager.find_message(message_id) if m.mailbox_id in self.mailboxes]
        return UserEmail(tuple(copies)) if copies else None
