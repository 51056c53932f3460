"""Storage ports of the mailbox layer, shaped after James's mappers.

The Cassandra adapter is where the James tables and their write order live (truth first,
projections after); the memory adapter keeps plain dicts. Business rules (paths, quotas,
events) live in ``manager.py`` and are the same for both.
"""

from __future__ import annotations

import builtins
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass

from mailserver.model.address import Domain, Username
from mailserver.model.flags import SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.mailbox import Mailbox, MailboxPath
from mailserver.model.message import MessageContent, MessageMetadata
from mailserver.model.quota import (
    UNLIMITED,
    LimitKey,
    QuotaLimits,
    QuotaRoot,
    QuotaScope,
    QuotaType,
    QuotaUsage,
    effective_limits,
)


@dataclass(frozen=True)
class MailboxCounters:
    count: int
    unseen: int


class MailboxStore(ABC):
    """``mailbox`` (by id) and ``mailboxPathV3`` (by path, unique)."""

    @abstractmethod
    def create(self, path: MailboxPath, uid_validity: int) -> Mailbox:
        """Register a new mailbox; raises MailboxExists when the path is taken."""

    @abstractmethod
    def rename(self, mailbox: Mailbox, new_path: MailboxPath) -> Mailbox: ...

    @abstractmethod
    def delete(self, mailbox: Mailbox) -> None: ...

    @abstractmethod
    def find_by_path(self, path: MailboxPath) -> Mailbox | None: ...

    @abstractmethod
    def find_by_id(self, mailbox_id: MailboxId) -> Mailbox | None: ...

    @abstractmethod
    def list_for_user(self, user: Username, namespace: str = "#private") -> list[Mailbox]: ...

    @abstractmethod
    def all_mailboxes(self) -> Iterator[Mailbox]: ...


class MessageStore(ABC):
    """messageV3 + imapUidTable (truth) + messageIdTable and the per-mailbox index tables."""

    @abstractmethod
    def next_uid(self, mailbox_id: MailboxId, count: int = 1) -> int:
        """Allocate ``count`` consecutive uids; returns the first."""

    @abstractmethod
    def next_modseq(self, mailbox_id: MailboxId) -> int: ...

    @abstractmethod
    def last_uid(self, mailbox_id: MailboxId) -> int:
        """The last uid allocated (0 when none), without allocating: IMAP's UIDNEXT is this + 1."""

    @abstractmethod
    def highest_modseq(self, mailbox_id: MailboxId) -> int:
        """The last modseq allocated (0 when none), without allocating: IMAP's HIGHESTMODSEQ."""

    @abstractmethod
    def save_content(self, content: MessageContent) -> None: ...

    @abstractmethod
    def get_content(self, message_id: MessageId) -> MessageContent | None: ...

    @abstractmethod
    def delete_content(self, message_id: MessageId) -> None: ...

    @abstractmethod
    def add(self, message: MessageMetadata) -> None:
        """Index one message in one mailbox (both tables, index tables, counters)."""

    @abstractmethod
    def complete_add(self, message: MessageMetadata) -> None:
        """Finish an ``add`` that a crash cut short after the truth row: the projection row, the
        index tables and the counters, none of which that ``add`` had written yet."""

    @abstractmethod
    def update_flags(self, old: MessageMetadata, new: MessageMetadata) -> bool:
        """Conditional on ``old.mod_seq`` (LWT); False when a concurrent update won."""

    @abstractmethod
    def delete(self, message: MessageMetadata) -> None:
        """Remove one message from one mailbox (both tables, index tables, counters)."""

    @abstractmethod
    def list(self, mailbox_id: MailboxId, uid_from: int = 1, uid_to: int | None = None) -> list[MessageMetadata]:
        """By uid range, from the projection (messageIdTable), as IMAP does."""

    @abstractmethod
    def find_by_message_id(self, message_id: MessageId, *,
                           settle_pending: bool = False) -> builtins.list[MessageMetadata]:
        """Every mailbox holding the message, from the truth (imapUidTable).

        ``settle_pending``: a copy whose conditional write timed out, its outcome unknown, is settled
        first (written or not, for good) and then counted: what a caller deciding "store it again?" needs."""

    @abstractmethod
    def deleted_uids(self, mailbox_id: MailboxId) -> builtins.list[int]: ...

    @abstractmethod
    def counters(self, mailbox_id: MailboxId) -> MailboxCounters: ...

    def state_reads(self, mailbox_id: MailboxId) -> tuple[MailboxCounters, int, int]:
        """``counters``, ``last_uid`` and ``highest_modseq`` of a mailbox: what IMAP SELECT and STATUS
        report. An adapter whose reads are requests sends the three together."""
        return self.counters(mailbox_id), self.last_uid(mailbox_id), self.highest_modseq(mailbox_id)

    @abstractmethod
    def clear_mailbox_indexes(self, mailbox_id: MailboxId) -> None:
        """Drop the per-mailbox index, counter and generator partitions of a deleted mailbox."""

    def rebuild_flag_index(self, mailbox_id: MailboxId, flag: SystemFlag) -> int:
        """Rewrite the mailbox's index of the messages flagged ``flag`` (``\\Deleted`` or ``\\Recent``)
        from the messages' own flags, as James's ``SolveMailboxFlagInconsistenciesService``; how many
        messages it lists. A store that reads them from the flags has no index to rewrite."""
        return sum(1 for m in self.list(mailbox_id) if m.flags.has(flag))


@dataclass(frozen=True)
class AppliedEvent:
    """One listener group applying one event: what a counting listener records to count it once."""

    group: str
    event_id: uuid.UUID


class QuotaStore(ABC):
    """quotaCurrentValue (counters) and quotaLimit (global / domain / user).

    Limit values are James's: a row's absence means "not set at this scope", ``-1`` means
    unlimited, any other value is the limit. The effective limit of a root is, per type, the
    first one set in user, domain, global order (``effective_limits``).
    """

    @abstractmethod
    def current(self, root: QuotaRoot) -> QuotaUsage: ...

    @abstractmethod
    def increase(self, root: QuotaRoot, delta: QuotaUsage, once: AppliedEvent | None = None) -> bool:
        """Add ``delta`` to the usage of ``root``; True when it was added.

        With ``once``, the delta and the record that this event was applied are written in one
        request, and nothing is written when the record is already there: a listener killed after
        its write but before its acknowledgement counts the event delivered again exactly once.
        """

    @abstractmethod
    def defined_limits(self, key: LimitKey) -> QuotaLimits:
        """The limits set at exactly this scope (None: not set there; -1: unlimited)."""

    @abstractmethod
    def _store_limit(self, key: LimitKey, quota_type: QuotaType, value: int | None) -> None:
        """Write one limit row (``value`` already checked); None removes it."""

    def set_limit(self, key: LimitKey, quota_type: QuotaType, value: int | None) -> None:
        """Set (``value`` >= -1, -1 = unlimited) or remove (None) one limit at one scope."""
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < UNLIMITED):
            raise ValueError(f"a quota limit is an integer greater or equal to -1, not {value!r}")
        self._store_limit(key, QuotaType(quota_type), value)

    def set_limits(self, key: LimitKey, limits: QuotaLimits) -> None:
        """Both types at once, as James's PUT of ``{"count", "size"}`` (None removes that type)."""
        self.set_limit(key, QuotaType.COUNT, limits.count)
        self.set_limit(key, QuotaType.SIZE, limits.size)

    def limits_by_scope(self, root: QuotaRoot) -> dict[QuotaScope, QuotaLimits]:
        """What each scope of ``root`` defines: user, its domain (when it has one), global."""
        keys = [LimitKey.user(root), *([LimitKey.domain(root.domain)] if root.domain else []), LimitKey.global_()]
        return {key.scope: self.defined_limits(key) for key in keys}

    def limits(self, root: QuotaRoot) -> QuotaLimits:
        """The effective limits: user scope, else domain, else global (per type)."""
        return effective_limits(self.limits_by_scope(root))

    def set_user_limits(self, root: QuotaRoot, limits: QuotaLimits) -> None:
        self.set_limits(LimitKey.user(root), limits)

    def set_domain_limits(self, domain: Domain, limits: QuotaLimits) -> None:
        self.set_limits(LimitKey.domain(domain), limits)

    def set_global_limits(self, limits: QuotaLimits) -> None:
        self.set_limits(LimitKey.global_(), limits)


class FastViewStore(ABC):
    """message_fast_view_projection: preview and hasAttachment per message id."""

    @abstractmethod
    def store(self, message_id: MessageId, preview: str, has_attachment: bool) -> None: ...

    @abstractmethod
    def retrieve(self, message_id: MessageId) -> tuple[str, bool] | None: ...

    @abstractmethod
    def delete(self, message_id: MessageId) -> None: ...

