"""Pre-deletion hooks (James's ``PreDeletionHook``): told of a definitive deletion before it happens.

The manager calls every hook before it removes anything (expunge, deletion by message id,
mailbox deletion with its messages); a hook that raises makes the deletion fail, with nothing
removed. Moves are not deletions: the message stays in the user's mailboxes.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from mailserver.mailbox.errors import MailboxError
from mailserver.model.mailbox import Mailbox
from mailserver.model.message import MessageMetadata


@dataclass(frozen=True)
class DeleteOperation:
    """What is about to be deleted: each message with the mailbox it leaves."""

    messages: tuple[tuple[MessageMetadata, Mailbox], ...]
    deletion_id: uuid.UUID = field(default_factory=uuid.uuid4)


class PreDeletionHook(ABC):
    @abstractmethod
    def notify_delete(self, operation: DeleteOperation) -> None:
        """Raise to refuse the deletion (e.g. the vault cannot store the messages)."""


class PreDeletionHookFailed(MailboxError):
    def __init__(self, hook: PreDeletionHook, count: int, cause: BaseException) -> None:
        super().__init__(f"deletion of {count} message(s) refused: {type(hook).__name__} failed "
                         f"({type(cause).__name__}: {cause}); nothing was deleted")
        self.hook, self.count = hook, count
