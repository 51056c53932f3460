"""Errors of the mailbox layer, each with a message an operator can act on."""

from __future__ import annotations


class MailboxError(Exception):
    pass


class MailboxExists(MailboxError):
    def __init__(self, path: object) -> None:
        super().__init__(f"mailbox {path} already exists")


class MailboxNotFound(MailboxError):
    def __init__(self, what: object) -> None:
        super().__init__(f"mailbox {what} not found")


class MailboxHasChildren(MailboxError):
    def __init__(self, path: object) -> None:
        super().__init__(f"mailbox {path} has children; delete them first or delete recursively")


class InboxCannotBeRenamedOrDeleted(MailboxError):
    def __init__(self, path: object) -> None:
        super().__init__(f"{path}: INBOX can be neither renamed nor deleted")


class MessageNotFound(MailboxError):
    pass


class OverQuota(MailboxError):
    def __init__(self, root: object, kinds: list[str], usage: object, limits: object) -> None:
        super().__init__(f"quota exceeded for {root} ({', '.join(kinds)}): usage after the operation "
                         f"would be {usage}, limits {limits}")
        self.kinds = kinds


class ConcurrentModification(MailboxError):
    """An LWT lost against a concurrent writer more times than we retry."""


class MaintenanceMode(MailboxError):
    """Mailbox writes are refused while the cluster is in maintenance mode."""
