"""James's ``ExpireMailboxTask`` (``DELETE /messages?olderThan=`` or ``?byExpiresHeader``): delete
the old messages of one mailbox (INBOX by default) of every user, or of one.

Messages are chosen as James's listing strategies do: internal date before now minus
``olderThan``; with ``useSavedDate``, the save date (a message without one is taken); with
``byExpiresHeader``, an ``Expires`` header dated before now. They are deleted through the mailbox
manager (flagged ``\\Deleted`` and expunged, so events, quotas and the vault hook apply). A re-run
finds only what is still there. Users are paced at ``usersPerSecond``, as James's throttle.
"""

from __future__ import annotations

import email.parser
import email.utils
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from mailserver.mailbox.errors import MailboxNotFound
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.james_units import parse_duration
from mailserver.model.mailbox import INBOX, MailboxPath
from mailserver.model.message import MessageMetadata
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskRegistry
from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)
DELETED = Flags.of(SystemFlag.DELETED)
HEADERS = email.parser.BytesHeaderParser()


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RunningOptions:
    """James's ``RunningOptions``, with its JSON field names."""

    users_per_second: int = 1
    mailbox: str = INBOX
    by_expires_header: bool = False
    older_than: str | None = None
    use_saved_date: bool = False
    user: str | None = None

    def max_age(self) -> timedelta | None:
        return None if self.older_than is None else parse_duration(self.older_than, "days")

    def to_json(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"usersPerSecond": self.users_per_second, "mailbox": self.mailbox,
                                  "byExpiresHeader": self.by_expires_header, "olderThan": self.older_than,
                                  "useSavedDate": self.use_saved_date, "user": self.user}
        return {name: value for name, value in fields.items() if value is not None}   # James: NON_ABSENT

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunningOptions:
        return cls(int(data.get("usersPerSecond", 1)), data.get("mailbox", INBOX),
                   bool(data.get("byExpiresHeader", False)), data.get("olderThan"),
                   bool(data.get("useSavedDate", False)), data.get("user"))


class ExpireMailboxTask(Task):
    type = "ExpireMailboxTask"

    def __init__(self, mailboxes: MailboxManager, users: UsersRepository, options: RunningOptions,
                 clock: Callable[[], datetime] = _now, pause: Callable[[float], None] = time.sleep) -> None:
        self.mailboxes, self.users, self.options = mailboxes, users, options
        self.clock, self.pause = clock, pause
        self.expired = self.failed = self.processed = self.deleted = 0

    def _users(self) -> Iterable[Username]:
        return [Username.of(self.options.user)] if self.options.user else self.users.list_users()

    def run(self) -> Result:
        started, result = time.monotonic(), Result.COMPLETED
        for index, user in enumerate(self._users()):
            if self.cancel_requested:
                return Result.COMPLETED   # the worker records the cancellation
            wait = started + index / self.options.users_per_second - time.monotonic()
            if wait > 0:
                self.pause(wait)
            if not self._expire(MailboxPath.of(user, self.options.mailbox)):
                result = Result.FAILED
        return result

    def _expire(self, path: MailboxPath) -> bool:
        try:
            uids = [m.uid for m in self.mailboxes.get_messages(path) if self._expires(m)]
        except MailboxNotFound:
            return True   # a user without this mailbox is skipped, not counted (James)
        try:
            if uids:
                self.mailboxes.set_flags(path, DELETED, FlagsUpdateMode.ADD, uids)
                self.mailboxes.expunge(path, uids)
                self.expired += 1
                self.deleted += len(uids)
            self.processed += 1
            return True
        except Exception:   # counted: the other users' mailboxes are still expired
            log.exception("expiring %s failed", path)
            self.failed += 1
            self.processed += 1
            return False

    def _expires(self, message: MessageMetadata) -> bool:
        now = self.clock()
        if self.options.by_expires_header:
            return _expires_header_before(self.mailboxes.read_header(message), now)
        max_age = self.options.max_age()
        assert max_age is not None   # the route requires one of olderThan, byExpiresHeader
        if self.options.use_saved_date:
            return message.save_date is None or message.save_date < now - max_age
        return message.internal_date < now - max_age

    def parameters(self) -> dict[str, Any]:
        return {"runningOptions": self.options.to_json()}

    def additional_information(self) -> dict[str, Any]:
        return {"runningOptions": self.options.to_json(), "mailboxesExpired": self.expired,
                "mailboxesFailed": self.failed, "mailboxesProcessed": self.processed,
                "messagesDeleted": self.deleted}


def _expires_header_before(header: bytes, now: datetime) -> bool:
    value = HEADERS.parsebytes(header).get("Expires")
    if value is None:
        return False
    try:
        expires = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return False   # an unreadable date expires nothing (James's search finds no date)
    if expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    return expires < now


def register(registry: TaskRegistry, mailboxes: MailboxManager, users: UsersRepository) -> None:
    registry.register(ExpireMailboxTask.type, lambda p: ExpireMailboxTask(
        mailboxes, users, RunningOptions.from_json(p["runningOptions"])))
