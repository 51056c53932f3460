"""Tasks on mailboxes: James's ``ClearMailboxContentTask``, ``SubscribeAllTask`` (one user's) and
``CreateMissingParentsTask`` (every user's).

Both go through the mailbox manager, never straight to the tables, so every rule of a mailbox
write applies to them (maintenance mode, events, the current-quota listener, and whatever hook
runs before a definitive deletion). A message is cleared the way IMAP clears it: flagged
``\\Deleted``, then expunged, one at a time, so one failure costs one message and is counted.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from mailserver.mailbox.errors import MailboxError, MailboxExists
from mailserver.mailbox.manager import MailboxManager
from mailserver.mailbox.subscriptions import SubscriptionStore
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry

log = logging.getLogger(__name__)
DELETED = Flags.of(SystemFlag.DELETED)


class ClearMailboxContentTask(Task):
    """Delete every message of one mailbox of one user (the mailbox stays)."""

    type = "ClearMailboxContentTask"

    def __init__(self, mailboxes: MailboxManager, username: Username, mailbox_name: str) -> None:
        self.mailboxes = mailboxes
        self.username = username
        self.mailbox_name = mailbox_name
        self._lock = threading.Lock()
        self._succeeded = 0
        self._failed = 0

    def run(self) -> Result:
        path = MailboxPath.of(self.username, self.mailbox_name)
        try:
            uids = [m.uid for m in self.mailboxes.get_messages(path)]
        except MailboxError:
            log.exception("cannot list %s to clear it", path)
            self._count(failed=True)
            return Result.FAILED
        for uid in uids:
            if self.cancel_requested:
                return Result.COMPLETED   # the worker records the cancellation
            try:
                self.mailboxes.set_flags(path, DELETED, FlagsUpdateMode.ADD, [uid])
                self.mailboxes.expunge(path, [uid])
                self._count(failed=False)
            except Exception:   # counted and reported: the other messages are still cleared
                log.exception("clearing uid %d of %s failed", uid, path)
                self._count(failed=True)
        return Result.FAILED if self._failed else Result.COMPLETED

    def _count(self, *, failed: bool) -> None:
        with self._lock:
            if failed:
                self._failed += 1
            else:
                self._succeeded += 1

    def parameters(self) -> dict[str, Any]:
        return {"username": str(self.username), "mailboxName": self.mailbox_name}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            return {"username": str(self.username), "mailboxName": self.mailbox_name,
                    "messagesSuccessCount": self._succeeded, "messagesFailCount": self._failed}


class SubscribeAllTask(Task):
    """Subscribe the user to each of their mailboxes, unsubscribe names that are no mailbox any more."""

    type = "SubscribeAllTask"

    def __init__(self, mailboxes: MailboxManager, subscriptions: SubscriptionStore, username: Username) -> None:
        self.mailboxes = mailboxes
        self.subscriptions = subscriptions
        self.username = username
        self._subscribed = 0
        self._unsubscribed = 0

    def run(self) -> Result:
        names = {m.path.name for m in self.mailboxes.list_mailboxes(self.username)}
        current = set(self.subscriptions.subscriptions(self.username))
        for name in sorted(current - names):
            self.subscriptions.unsubscribe(self.username, name)
            self._unsubscribed += 1
        for name in sorted(names - current):
            self.subscriptions.subscribe(self.username, name)
            self._subscribed += 1
        return Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {"username": str(self.username)}

    def additional_information(self) -> dict[str, Any]:
        return {"username": str(self.username), "subscribedCount": self._subscribed,
                "unsubscribedCount": self._unsubscribed}


class CreateMissingParentsTask(Task):
    """Create each missing parent of every stored mailbox (a crash between a parent and its child, or
    a James node's write, can leave ``a.b`` without ``a``). Idempotent: a re-run finds none missing."""

    type = "CreateMissingParentsTask"

    def __init__(self, mailboxes: MailboxManager) -> None:
        self.mailboxes = mailboxes
        self.created: list[str] = []
        self.failures: list[str] = []

    def run(self) -> Result:
        # Every mailbox in the table, as James's system-session listing (removed users' included).
        paths = {m.path for m in self.mailboxes.mailboxes.all_mailboxes()}
        missing = {parent for path in paths for parent in path.parents()} - paths
        for parent in sorted(missing, key=lambda p: (str(p.user), p.name)):
            try:
                self.created.append(str(self.mailboxes.create_mailbox(parent)))
            except MailboxExists:
                pass   # created meanwhile (by a user, or a child's creation): no longer missing
            except Exception:   # counted and named: the other parents are still created
                log.exception("creating the missing parent %s failed", parent)
                self.failures.append(parent.as_string())
        return Result.FAILED if self.failures else Result.COMPLETED

    def parameters(self) -> dict[str, Any]:
        return {}

    def additional_information(self) -> dict[str, Any]:
        return {"created": list(self.created), "totalCreated": len(self.created),
                "failures": list(self.failures), "totalFailure": len(self.failures)}


def register(registry: TaskRegistry, mailboxes: MailboxManager, subscriptions: SubscriptionStore | None) -> None:
    registry.register(CreateMissingParentsTask.type, lambda p: CreateMissingParentsTask(mailboxes))
    registry.register(ClearMailboxContentTask.type, lambda p: ClearMailboxContentTask(
        mailboxes, Username.of(p["username"]), p["mailboxName"]))
    if subscriptions is not None:
        registry.register(SubscribeAllTask.type, lambda p: SubscribeAllTask(
            mailboxes, subscriptions, Username.of(p["username"])))
