"""Memory adapters of the mailbox storage ports (unit tests, single-process experiments)."""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator

from mailserver.mailbox.errors import MailboxExists
from mailserver.mailbox.store import (
    AppliedEvent,
    FastViewStore,
    MailboxCounters,
    MailboxStore,
    MessageStore,
    QuotaStore,
)
from mailserver.model.address import Username
from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.mailbox import Mailbox, MailboxPath
from mailserver.model.message import MessageContent, MessageMetadata
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot, QuotaType, QuotaUsage


class MemoryMailboxStore(MailboxStore):
    def __init__(self) -> None:
        self._by_id: dict[MailboxId, Mailbox] = {}
        self._by_path: dict[MailboxPath, MailboxId] = {}
        self._lock = threading.Lock()

    def create(self, path: MailboxPath, uid_validity: int) -> Mailbox:
        with self._lock:
            if path in self._by_path:
                raise MailboxExists(path)
            mailbox = Mailbox(MailboxId.generate(), path, uid_validity)
            self._by_path[path] = mailbox.id
            self._by_id[mailbox.id] = mailbox
            return mailbox

    def rename(self, mailbox: Mailbox, new_path: MailboxPath) -> Mailbox:
        with self._lock:
            if new_path in self._by_path:
                raise MailboxExists(new_path)
            renamed = Mailbox(mailbox.id, new_path, mailbox.uid_validity)
            self._by_path[new_path] = mailbox.id
            self._by_id[mailbox.id] = renamed
            self._by_path.pop(mailbox.path, None)
            return renamed

    def delete(self, mailbox: Mailbox) -> None:
        with self._lock:
            if self._by_path.get(mailbox.path) == mailbox.id:
                del self._by_path[mailbox.path]
            self._by_id.pop(mailbox.id, None)

    def find_by_path(self, path: MailboxPath) -> Mailbox | None:
        mailbox_id = self._by_path.get(path)
        return self._by_id.get(mailbox_id) if mailbox_id else None

    def find_by_id(self, mailbox_id: MailboxId) -> Mailbox | None:
        return self._by_id.get(mailbox_id)

    def list_for_user(self, user: Username, namespace: str = "#private") -> list[Mailbox]:
        return sorted((m for m in self._by_id.values() if m.path.user == user and m.path.namespace == namespace),
                      key=lambda m: m.path.name)

    def all_mailboxes(self) -> Iterator[Mailbox]:
        return iter(list(self._by_id.values()))


class MemoryMessageStore(MessageStore):
    def __init__(self) -> None:
        self._contents: dict[MessageId, MessageContent] = {}
        self._by_mailbox: dict[MailboxId, dict[int, MessageMetadata]] = {}
        self._uids: dict[MailboxId, int] = {}
        self._modseqs: dict[MailboxId, int] = {}
        self._lock = threading.Lock()

    def next_uid(self, mailbox_id: MailboxId, count: int = 1) -> int:
        with self._lock:
            first = self._uids.get(mailbox_id, 0) + 1
            self._uids[mailbox_id] = first + count - 1
            return first

    def next_modseq(self, mailbox_id: MailboxId) -> int:
        with self._lock:
            self._modseqs[mailbox_id] = self._modseqs.get(mailbox_id, 0) + 1
            return self._modseqs[mailbox_id]

    def last_uid(self, mailbox_id: MailboxId) -> int:
        return self._uids.get(mailbox_id, 0)

    def highest_modseq(self, mailbox_id: MailboxId) -> int:
        return self._modseqs.get(mailbox_id, 0)

    def save_content(self, content: MessageContent) -> None:
        self._contents[content.message_id] = content

    def get_content(self, message_id: MessageId) -> MessageContent | None:
        return self._contents.get(message_id)

    def delete_content(self, message_id: MessageId) -> None:
        self._contents.pop(message_id, None)

    def add(self, message: MessageMetadata) -> None:
        with self._lock:
            self._by_mailbox.setdefault(message.mailbox_id, {})[message.uid] = message

    def complete_add(self, message: MessageMetadata) -> None:
        self.add(message)   # an add here is atomic: nothing is ever half written

    def update_flags(self, old: MessageMetadata, new: MessageMetadata) -> bool:
        with self._lock:
            current = self._by_mailbox.get(old.mailbox_id, {}).get(old.uid)
            if current is None or current.mod_seq != old.mod_seq:
                return False
            self._by_mailbox[old.mailbox_id][old.uid] = new
            return True

    def delete(self, message: MessageMetadata) -> None:
        with self._lock:
            self._by_mailbox.get(message.mailbox_id, {}).pop(message.uid, None)

    def list(self, mailbox_id: MailboxId, uid_from: int = 1, uid_to: int | None = None) -> list[MessageMetadata]:
        rows = self._by_mailbox.get(mailbox_id, {})
        return [rows[u] for u in sorted(rows) if u >= uid_from and (uid_to is None or u <= uid_to)]

    def find_by_message_id(self, message_id: MessageId, *,
                           settle_pending: bool = False) -> builtins.list[MessageMetadata]:
        return sorted((m for rows in self._by_mailbox.values() for m in rows.values() if m.message_id == message_id),
                      key=lambda m: (str(m.mailbox_id), m.uid))

    def deleted_uids(self, mailbox_id: MailboxId) -> builtins.list[int]:
        return [m.uid for m in self.list(mailbox_id) if m.flags.has(SystemFlag.DELETED)]

    def counters(self, mailbox_id: MailboxId) -> MailboxCounters:
        rows = self.list(mailbox_id)
        return MailboxCounters(len(rows), sum(1 for m in rows if not m.flags.has(SystemFlag.SEEN)))

    def clear_mailbox_indexes(self, mailbox_id: MailboxId) -> None:
        with self._lock:
            self._by_mailbox.pop(mailbox_id, None)


class MemoryQuotaStore(QuotaStore):
    def __init__(self) -> None:
        self._current: dict[QuotaRoot, QuotaUsage] = {}
        self._limits: dict[tuple[LimitKey, QuotaType], int] = {}
        self._applied: set[AppliedEvent] = set()
        self._lock = threading.Lock()

    def current(self, root: QuotaRoot) -> QuotaUsage:
        return self._current.get(root, QuotaUsage(0, 0))

    def increase(self, root: QuotaRoot, delta: QuotaUsage, once: AppliedEvent | None = None) -> bool:
        with self._lock:
            if once is not None:
                if once in self._applied:
                    return False
                self._applied.add(once)
            self._current[root] = self.current(root) + delta
            return True

    def defined_limits(self, key: LimitKey) -> QuotaLimits:
        return QuotaLimits(self._limits.get((key, QuotaType.COUNT)), self._limits.get((key, QuotaType.SIZE)))

    def _store_limit(self, key: LimitKey, quota_type: QuotaType, value: int | None) -> None:
        with self._lock:
            if value is None:
                self._limits.pop((key, quota_type), None)
            else:
                self._limits[(key, quota_type)] = value


class MemoryFastViewStore(FastViewStore):
    def __init__(self) -> None:
        self._rows: dict[MessageId, tuple[str, bool]] = {}

    def store(self, message_id: MessageId, preview: str, has_attachment: bool) -> None:
        self._rows[message_id] = (preview, has_attachment)

    def retrieve(self, message_id: MessageId) -> tuple[str, bool] | None:
        return self._rows.get(message_id)

    def delete(self, message_id: MessageId) -> None:
        self._rows.pop(message_id, None)
