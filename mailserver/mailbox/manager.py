"""The mailbox manager: what IMAP, JMAP, LocalDelivery and WebAdmin call.

Rules live here, storage in the ports: paths and hierarchy, uid and modseq allocation, quota
enforcement, the order of writes (content, then the truth, then projections) and the events
that drive the group listeners (current quota, fast view, deletion cleanup).
"""

from __future__ import annotations

import io
import random
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, BinaryIO

from mailserver.blob.api import BlobStore, BlobStream, StoragePolicy
from mailserver.events.api import EventBus
from mailserver.mailbox import content as message_content
from mailserver.mailbox.acl import AclStore
from mailserver.mailbox.errors import (
    ConcurrentModification,
    InboxCannotBeRenamedOrDeleted,
    MailboxExists,
    MailboxHasChildren,
    MailboxNotFound,
    MessageNotFound,
    OverQuota,
)
from mailserver.mailbox.hooks import DeleteOperation, PreDeletionHook, PreDeletionHookFailed
from mailserver.mailbox.store import MailboxCounters, MailboxStore, MessageStore, QuotaStore
from mailserver.model.address import Username
from mailserver.model.events import (
    Added,
    Expunged,
    FlagsUpdated,
    MailboxACLUpdated,
    MailboxAdded,
    MailboxDeletion,
    MailboxRenamed,
    MessageMoveEvent,
    UpdatedFlags,
)
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.mailbox import INBOX, Mailbox, MailboxPath
from mailserver.model.message import ComposedMessageId, EventMessageMetadata, MessageContent, MessageMetadata
from mailserver.model.quota import QuotaRoot, QuotaUsage

FLAG_UPDATE_RETRIES = 20
APPEND_WRITERS = 16   # blob saves in flight for concurrent appends (two per append)


@dataclass(frozen=True)
class MailboxState:
    """What IMAP SELECT and STATUS report, from cheap reads (counters and the uid/modseq generators).

    Any append, copy, move, flag change or expunge changes at least one field, so a session can
    poll this to learn that its selected mailbox changed.
    """

    count: int
    unseen: int
    uid_next: int
    highest_modseq: int


@dataclass(frozen=True)
class AppendResult:
    id: ComposedMessageId
    size: int
    metadata: MessageMetadata


@dataclass(frozen=True)
class StoredBody:
    """A message body already in the mailbox's blob bucket, handed over to the message appended with it.

    The new message owns the blob from then on (its deletion deletes it): the previous holder, e.g.
    the spool entry the mail came from, must not delete it any more (``mailets/blob_handover``).
    """

    blob_id: str
    size: int


@dataclass(frozen=True)
class AppendOnce:
    """What ``append_once`` did: stored a new copy (``appended``), or found one stored before, of
    which ``finished`` lists those a crash had left half written and that it completed."""

    appended: AppendResult | None
    finished: tuple[MessageMetadata, ...]


class MailboxManager:
    def __init__(self, mailboxes: MailboxStore, messages: MessageStore, quota: QuotaStore, blobs: BlobStore,
                 events: EventBus, acl: AclStore, *, write_guard: Callable[[], None] | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 pre_deletion_hooks: Sequence[PreDeletionHook] = ()) -> None:
        self.mailboxes, self.messages, self.quota, self.blobs, self.events = mailboxes, messages, quota, blobs, events
        self.acl = acl
        self._guard = write_guard or (lambda: None)
        self._now = clock
        self.pre_deletion_hooks: list[PreDeletionHook] = list(pre_deletion_hooks)
        self._writers: futures.ThreadPoolExecutor | None = None
        self._writers_lock = threading.Lock()

    def _io(self) -> futures.ThreadPoolExecutor:
        """Threads that write an append's blobs while the calling thread allocates its uid and modseq."""
        with self._writers_lock:
            if self._writers is None:
                self._writers = futures.ThreadPoolExecutor(APPEND_WRITERS, thread_name_prefix="append-blobs")
            return self._writers

    def _before_deletion(self, messages: Sequence[tuple[MessageMetadata, Mailbox]]) -> None:
        """Tell every hook (the vault) first; a failing hook fails the deletion before anything is removed."""
        if not messages or not self.pre_deletion_hooks:
            return
        operation = DeleteOperation(tuple(messages))
        for hook in self.pre_deletion_hooks:
            try:
                hook.notify_delete(operation)
            except Exception as exc:
                raise PreDeletionHookFailed(hook, len(messages), exc) from exc

    # ------------------------------------------------------------------ mailboxes
    def create_mailbox(self, path: MailboxPath) -> MailboxId:
        """Create ``path`` and its missing parents; MailboxExists when ``path`` itself exists.

        Every creator (IMAP, WebAdmin, mailets, restores) comes through here: the name is checked
        as James's ``StoreMailboxManager`` does (``MailboxPath.assert_acceptable``).
        """
        path.assert_acceptable()
        self._guard()
        if self.mailboxes.find_by_path(path) is not None:
            raise MailboxExists(path)
        created: list[Mailbox] = []
        for parent in path.parents():
            if self.mailboxes.find_by_path(parent) is None:
                try:
                    created.append(self.mailboxes.create(parent, _uid_validity()))
                except MailboxExists:
                    pass  # created concurrently: fine for a parent
        mailbox = self.mailboxes.create(path, _uid_validity())
        created.append(mailbox)
        self.events.dispatch(*(MailboxAdded(user=m.path.user, path=m.path, mailbox_id=m.id) for m in created))
        return mailbox.id

    def get_mailbox(self, path: MailboxPath) -> Mailbox:
        mailbox = self.mailboxes.find_by_path(path)
        if mailbox is None:
            raise MailboxNotFound(path)
        return mailbox

    def get_mailbox_by_id(self, mailbox_id: MailboxId) -> Mailbox:
        mailbox = self.mailboxes.find_by_id(mailbox_id)
        if mailbox is None:
            raise MailboxNotFound(mailbox_id)
        return mailbox

    def list_mailboxes(self, user: Username) -> list[Mailbox]:
        return sorted(self.mailboxes.list_for_user(user), key=lambda m: m.path.name)

    def mailbox_exists(self, path: MailboxPath) -> bool:
        return self.mailboxes.find_by_path(path) is not None

    def _children(self, mailbox: Mailbox) -> list[Mailbox]:
        return [m for m in self.mailboxes.list_for_user(mailbox.path.user, mailbox.path.namespace)
                if m.path.is_descendant_of(mailbox.path)]

    def rename_mailbox(self, source: MailboxPath, target: MailboxPath) -> None:
        """Rename ``source`` and every child under it; missing parents of ``target`` are created."""
        target.assert_acceptable()
        self._guard()
        if source.name == INBOX:
            raise InboxCannotBeRenamedOrDeleted(source)
        mailbox = self.get_mailbox(source)
        if self.mailboxes.find_by_path(target) is not None:
            raise MailboxExists(target)
        if target.is_descendant_of(source):
            raise MailboxExists(f"{target} (a mailbox cannot be moved under itself)")
        for parent in target.parents():
            if self.mailboxes.find_by_path(parent) is None:
                self.create_mailbox(parent)
        self._rename_tree([mailbox, *self._children(mailbox)], source, target)

    def rename_to_user(self, source: MailboxPath, user: Username) -> None:
        """James's rename between two sessions (a username change): ``source`` and its children keep
        their ids under the same names of ``user``. As James: INBOX goes alone (its children stay),
        no missing parent is created and no quota is checked; unlike James, the current usage of
        the renamed mailboxes moves to the new owner's quota root with them."""
        self._guard()
        target = MailboxPath(source.namespace, user, source.name)
        mailbox = self.get_mailbox(source)
        if self.mailboxes.find_by_path(target) is not None:
            raise MailboxExists(target)
        tree = [mailbox] if source.name == INBOX else [mailbox, *self._children(mailbox)]
        old_root, new_root = QuotaRoot.for_user(source.user), QuotaRoot.for_user(user)
        usage = QuotaUsage(0, 0)
        if old_root != new_root:
            for m in tree:
                messages = self.messages.list(m.id)
                usage = usage + QuotaUsage(len(messages), sum(x.size for x in messages))
        self._rename_tree(tree, source, target)
        if usage != QuotaUsage(0, 0):
            self.quota.increase(old_root, -usage)
            self.quota.increase(new_root, usage)

    def _rename_tree(self, tree: list[Mailbox], source: MailboxPath, target: MailboxPath) -> None:
        events = []
        for m in tree:
            new_path = target if m.path == source else m.path.renamed_under(source, target)
            renamed = self.mailboxes.rename(m, new_path)
            events.append(MailboxRenamed(user=m.path.user, path=m.path, new_path=renamed.path, mailbox_id=m.id))
        self.events.dispatch(*events)

    def delete_mailbox(self, path: MailboxPath, *, recursive: bool = False, keep_children: bool = False) -> None:
        """Delete ``path``; with children: refused, or all deleted (``recursive``), or kept (``keep_children``,
        IMAP's DELETE: the name stays as a hierarchy level, RFC 3501 6.3.4)."""
        self._guard()
        if path.name == INBOX and not recursive:
            raise InboxCannotBeRenamedOrDeleted(path)
        mailbox = self.get_mailbox(path)
        children = [] if keep_children else self._children(mailbox)
        if children and not recursive:
            raise MailboxHasChildren(path)
        # Deepest first, so a crash never leaves a child without its parent.
        doomed = sorted([mailbox, *children], key=lambda m: m.path.name.count("."), reverse=True)
        contents = {m.id: self.messages.list(m.id) for m in doomed}
        # One operation for the whole tree: a message in a parent and a child is lost once, with both origins.
        self._before_deletion([(x, m) for m in doomed for x in contents[m.id]])
        for m in doomed:
            messages = contents[m.id]
            rights = self.acl.get(m.id)
            self.mailboxes.delete(m)
            self.acl.delete(m.id)
            self.events.dispatch(MailboxDeletion(
                user=m.path.user, path=m.path, mailbox_id=m.id, quota_root=QuotaRoot.for_user(m.path.user),
                deleted_message_count=len(messages), total_deleted_size=sum(x.size for x in messages), acl=rights))

    def shared_with(self, user: Username) -> list[Mailbox]:
        """Other users' mailboxes ``user`` may look up (an ACL entry with ``l``), as James's search
        of every mailbox name lists them besides the user's own."""
        shared = []
        for mailbox_id, rights in self.acl.granted_to(user.value).items():
            mailbox = self.mailboxes.find_by_id(mailbox_id)
            if mailbox is not None and mailbox.path.user != user and "l" in rights:
                shared.append(mailbox)
        return sorted(shared, key=lambda m: (str(m.path.user), m.path.name))

    def get_acl(self, path: MailboxPath) -> dict[str, str]:
        return self.acl.get(self.get_mailbox(path).id)

    def set_rights(self, path: MailboxPath, key: str, rights: str) -> dict[str, str]:
        """Grant ``rights`` (RFC 4314 letters) to entry ``key``; empty ``rights`` removes the entry."""
        self._guard()
        mailbox = self.get_mailbox(path)
        old, new = self.acl.set_rights(mailbox.id, key, rights)
        if old != new:
            self.events.dispatch(MailboxACLUpdated(user=path.user, path=mailbox.path, mailbox_id=mailbox.id,
                                                   old_acl=dict(old), new_acl=dict(new)))
        return new

    def counters(self, path: MailboxPath) -> MailboxCounters:
        return self.messages.counters(self.get_mailbox(path).id)

    def _resolved(self, mailbox: MailboxPath | Mailbox) -> Mailbox:
        """A mailbox a caller has just looked up is used as it is: one path lookup per operation."""
        return mailbox if isinstance(mailbox, Mailbox) else self.get_mailbox(mailbox)

    def mailbox_state(self, path: MailboxPath | Mailbox) -> MailboxState:
        mailbox = self._resolved(path)
        counters, last_uid, highest_modseq = self.messages.state_reads(mailbox.id)
        return MailboxState(counters.count, counters.unseen, last_uid + 1, highest_modseq)

    # ------------------------------------------------------------------ messages
    def append(self, target: MailboxPath | Mailbox, raw: bytes | BinaryIO | Iterable[bytes], *,
               internal_date: datetime | None = None, flags: Flags | None = None,
               is_delivery: bool = False, message_id: MessageId | None = None,
               body: StoredBody | None = None) -> AppendResult:
        """Store a message; the content is streamed to the blob store, never held whole in memory.

        ``message_id`` lets a caller that may run twice for the same message (a mail delivered
        again after a crash) choose the id, so it can tell whether the first run stored it.
        ``body``: the body is that stored blob, which the message takes over (no second copy);
        ``raw`` is then the header alone, ended by its empty line.
        ``target``: the mailbox's path, or the mailbox the caller has just looked up.
        """
        self._guard()
        mailbox = self._resolved(target)
        path = mailbox.path
        parts = message_content.split(raw)  # MalformedMessage before anything is written
        try:
            if body is not None and parts.body.read(1):
                raise ValueError("with a stored body, the raw content must be the header alone")
            size = parts.size + (body.size if body is not None else 0)
            self._check_quota(path.user, QuotaUsage(1, size))
            bucket = self.blobs.default_bucket
            # Independent of each other, so sent together (James zips the two blob saves and
            # allocates meanwhile): the blobs, and the uid and modseq. A crash in between leaves
            # unreferenced blobs or an unused uid, never a listed message without its content.
            saves = [self._io().submit(self.blobs.save, bucket, parts.header, StoragePolicy.SIZE_BASED)]
            if body is None:
                saves.append(self._io().submit(self.blobs.save, bucket, parts.body, StoragePolicy.LOW_COST))
            try:
                uid, mod_seq = self.messages.next_uid(mailbox.id), self.messages.next_modseq(mailbox.id)
            finally:
                futures.wait(saves)   # the streams are read by the saves until they end
            header_blob = saves[0].result()
            body_blob = body.blob_id if body is not None else saves[1].result()
        finally:
            parts.close()
        now = self._now()
        message_id = message_id or MessageId.generate()
        self.messages.save_content(MessageContent(
            message_id=message_id, internal_date=internal_date or now, body_start_octet=parts.body_start_octet,
            full_content_octets=size, header_blob_id=str(header_blob), body_blob_id=str(body_blob)))
        flags = flags or Flags()
        if is_delivery:
            flags = Flags(flags.system | {SystemFlag.RECENT}, flags.user)
        metadata = MessageMetadata(
            mailbox_id=mailbox.id, message_id=message_id, uid=uid, mod_seq=mod_seq, flags=flags, thread_id=message_id,
            internal_date=internal_date or now, save_date=now, body_start_octet=parts.body_start_octet,
            size=size, header_blob_id=str(header_blob))
        self.messages.add(metadata)
        self.events.dispatch(Added(user=path.user, path=mailbox.path, mailbox_id=mailbox.id,
                                   added=(metadata.for_event(),), is_delivery=is_delivery, is_appended=True))
        return AppendResult(metadata.composed_id, size, metadata)

    def append_once(self, path: MailboxPath, raw: bytes | BinaryIO | Iterable[bytes], message_id: MessageId, *,
                    internal_date: datetime | None = None, is_delivery: bool = False,
                    body: StoredBody | None = None) -> AppendOnce:
        """Append under ``message_id`` unless a copy under it exists already (in any mailbox: it may
        have been moved): for a caller that may run twice for the same message, e.g. a delivery
        redone after a crash.

        A copy the earlier run left half written (in imapUidTable, not yet listed, the crash came
        between the two) is finished rather than stored again: listed, indexed, counted and
        announced (``Added``) once. What a crash can still leave behind is a copy listed but with
        its counters or its ``Added`` event missing (the recompute-counters, recompute-quotas and
        reindex maintenance cure those).
        """
        self._guard()
        existing = self.messages.find_by_message_id(message_id, settle_pending=True)
        if not existing:
            return AppendOnce(self.append(path, raw, internal_date=internal_date, is_delivery=is_delivery,
                                          message_id=message_id, body=body), finished=())
        finished: list[MessageMetadata] = []
        target = self.mailboxes.find_by_path(path)
        for metadata in existing:
            # The target by its path entry (the truth), not by its row: a row can be missing
            # while the mailbox lives (its creation cut short), and skipping would lose the copy.
            mailbox = target if target is not None and target.id == metadata.mailbox_id \
                else self.mailboxes.find_by_id(metadata.mailbox_id)
            if mailbox is None or self.messages.list(metadata.mailbox_id, metadata.uid, metadata.uid):
                continue   # listed already, or its mailbox was deleted since
            self.messages.complete_add(metadata)
            self.events.dispatch(Added(user=mailbox.path.user, path=mailbox.path, mailbox_id=mailbox.id,
                                       added=(metadata.for_event(),), is_delivery=is_delivery, is_appended=True))
            finished.append(metadata)
        return AppendOnce(None, tuple(finished))

    def body_blob_id(self, message_id: MessageId) -> str | None:
        """The blob holding a stored message's body (None when no content is stored under the id)."""
        content = self.messages.get_content(message_id)
        return content.body_blob_id if content is not None else None

    def stored_once(self, message_id: MessageId) -> bool:
        """A copy under ``message_id`` is stored and listed in a mailbox (not left half written by a
        crash: ``append_once`` would finish that one)."""
        return any(self.messages.list(m.mailbox_id, m.uid, m.uid) for m in self.messages.find_by_message_id(message_id))

    def get_messages(self, path: MailboxPath | Mailbox, uid_from: int = 1,
                     uid_to: int | None = None) -> list[MessageMetadata]:
        return self.messages.list(self._resolved(path).id, uid_from, uid_to)

    def find_message(self, message_id: MessageId) -> list[MessageMetadata]:
        return self.messages.find_by_message_id(message_id)

    def read_message(self, message_id: MessageId) -> bytes:
        content = self.messages.get_content(message_id)
        if content is None:
            raise MessageNotFound(f"message {message_id} not found")
        bucket = self.blobs.default_bucket
        return self.blobs.read(bucket, content.header_blob_id) + self.blobs.read(bucket, content.body_blob_id)

    def read_header(self, message: MessageMetadata) -> bytes:
        """The header of a message (up to and including the blank line), from its header blob only."""
        return self.blobs.read(self.blobs.default_bucket, message.header_blob_id)

    def open_message(self, message_id: MessageId, *, header: bytes | None = None) -> BinaryIO:
        """The full message as a stream (header blob, then body blob, read in chunks); close it after use.

        ``header``: the message's header as the caller already holds it (read_header's bytes, e.g.
        from a cache), so that only the body blob is read."""
        content = self.messages.get_content(message_id)
        if content is None:
            raise MessageNotFound(f"message {message_id} not found")
        bucket = self.blobs.default_bucket
        known = header
        first: Callable[[], BinaryIO | BlobStream] = (
            (lambda: self.blobs.read_stream(bucket, content.header_blob_id)) if known is None
            else (lambda: io.BytesIO(known)))
        return io.BufferedReader(_Concatenated([first, lambda: self.blobs.read_stream(bucket, content.body_blob_id)]),
                                 buffer_size=message_content.CHUNK)

    def _select(self, mailbox: Mailbox, uids: Sequence[int] | None) -> list[MessageMetadata]:
        if uids is None:
            return self.messages.list(mailbox.id)
        if not uids:
            return []
        # The span of the wanted uids only: a STORE of one new message must not read the whole mailbox.
        wanted = set(uids)
        return [m for m in self.messages.list(mailbox.id, min(wanted), max(wanted)) if m.uid in wanted]

    def _check_quota(self, user: Username, delta: QuotaUsage) -> None:
        root = QuotaRoot.for_user(user)
        limits = self.quota.limits(root)
        if limits.unlimited:
            return
        after = self.quota.current(root) + delta
        over = limits.exceeded_by(after)
        if over:
            raise OverQuota(root.value, [o.value for o in over], after, limits)

    def copy(self, source: MailboxPath, target: MailboxPath,
             uids: Sequence[int] | None = None) -> list[ComposedMessageId]:
        return self._copy(source, target, uids, move=False)

    def move(self, source: MailboxPath, target: MailboxPath,
             uids: Sequence[int] | None = None, *, check_quota: bool = True) -> list[ComposedMessageId]:
        """``check_quota=False``: an administrator's move (a username change) the target's limits cannot refuse."""
        return self._copy(source, target, uids, move=True, check_quota=check_quota)

    def _copy(self, source: MailboxPath, target: MailboxPath, uids: Sequence[int] | None,
              move: bool, check_quota: bool = True) -> list[ComposedMessageId]:
        self._guard()
        src, dst = self.get_mailbox(source), self.get_mailbox(target)
        selected = self._select(src, uids)
        if not selected:
            return []
        same_root = QuotaRoot.for_user(src.path.user) == QuotaRoot.for_user(dst.path.user)
        if check_quota and not (move and same_root):
            self._check_quota(dst.path.user, QuotaUsage(len(selected), sum(m.size for m in selected)))
        first_uid = self.messages.next_uid(dst.id, len(selected))
        now = self._now()
        copies = []
        for offset, m in enumerate(selected):
            flags = Flags(m.flags.system | {SystemFlag.RECENT}, m.flags.user)
            copy = MessageMetadata(
                mailbox_id=dst.id, message_id=m.message_id, uid=first_uid + offset,
                mod_seq=self.messages.next_modseq(dst.id), flags=flags, thread_id=m.thread_id,
                internal_date=m.internal_date, save_date=now, body_start_octet=m.body_start_octet,
                size=m.size, header_blob_id=m.header_blob_id)
            self.messages.add(copy)
            copies.append(copy)
        events: list = [Added(user=dst.path.user, path=dst.path, mailbox_id=dst.id, added=_for_event(copies),
                              is_appended=False, moved_from=src.id if move else None)]
        if move:
            for m in selected:
                self.messages.delete(m)
            events.append(Expunged(user=src.path.user, path=src.path, mailbox_id=src.id,
                                   expunged=_for_event(selected), moved_to=dst.id))
            events.append(MessageMoveEvent(user=src.path.user, previous_mailbox_ids=(src.id,),
                                           target_mailbox_ids=(dst.id,),
                                           message_ids=tuple(m.message_id for m in selected)))
        self.events.dispatch(*events)
        return [c.composed_id for c in copies]

    def set_flags(self, path: MailboxPath | Mailbox, flags: Flags, mode: FlagsUpdateMode,
                  uids: Sequence[int] | None = None, *,
                  known: Mapping[int, MessageMetadata] | None = None) -> list[UpdatedFlags]:
        """``known``: the caller's copies of the messages (an IMAP session's selected mailbox), used
        instead of reading them when each of ``uids`` is there and changes by them. The
        compare-and-set on modseq checks each copy: a stale one is read again, as a lost race is."""
        self._guard()
        mailbox = self._resolved(path)
        updated: list[UpdatedFlags] = []
        for m in self._guessed(mailbox, uids, known, flags, mode) or self._select(mailbox, uids):
            result = self._update_one(m, flags, mode)
            if result is not None:
                updated.append(result)
        if updated:
            self.events.dispatch(FlagsUpdated(user=mailbox.path.user, path=mailbox.path, mailbox_id=mailbox.id,
                                              updated=tuple(updated)))
        return updated

    @staticmethod
    def _guessed(mailbox: Mailbox, uids: Sequence[int] | None, known: Mapping[int, MessageMetadata] | None,
                 flags: Flags, mode: FlagsUpdateMode) -> list[MessageMetadata]:
        """The caller's copies of ``uids`` when all are known and all would change (a copy that
        would not change may be stale: no write would check it, so those are read)."""
        if not uids or known is None:
            return []
        copies = [known.get(uid) for uid in sorted(set(uids))]
        if any(m is None or m.mailbox_id != mailbox.id or m.flags.apply(mode, flags) == m.flags for m in copies):
            return []
        return copies   # type: ignore[return-value]   # no None left

    def _update_one(self, current: MessageMetadata, flags: Flags, mode: FlagsUpdateMode) -> UpdatedFlags | None:
        for _ in range(FLAG_UPDATE_RETRIES):
            new_flags = current.flags.apply(mode, flags)
            if new_flags == current.flags:
                return None
            new = current.with_flags(new_flags, self.messages.next_modseq(current.mailbox_id))
            if self.messages.update_flags(current, new):
                return UpdatedFlags(new.uid, new.mod_seq, current.flags, new_flags, new.message_id, new.internal_date)
            # Lost the compare-and-set on modSeq: re-read the truth and apply the change again.
            fresh = [m for m in self.messages.find_by_message_id(current.message_id)
                     if m.mailbox_id == current.mailbox_id and m.uid == current.uid]
            if not fresh:
                return None
            current = fresh[0]
        raise ConcurrentModification(f"flags of uid {current.uid} in {current.mailbox_id} kept changing")

    def expunge(self, path: MailboxPath, uids: Sequence[int] | None = None) -> list[int]:
        """Remove messages flagged \\Deleted (all of them, or those among ``uids``)."""
        self._guard()
        mailbox = self.get_mailbox(path)
        deleted = set(self.messages.deleted_uids(mailbox.id))
        if uids is not None:
            deleted &= set(uids)
        victims = [m for m in self.messages.list(mailbox.id) if m.uid in deleted and m.flags.has(SystemFlag.DELETED)]
        self._before_deletion([(m, mailbox) for m in victims])
        for m in victims:
            self.messages.delete(m)
        if victims:
            self.events.dispatch(Expunged(user=path.user, path=mailbox.path, mailbox_id=mailbox.id,
                                          expunged=_for_event(victims)))
        return [m.uid for m in victims]

    def delete_messages(self, user: Username, message_ids: Iterable[MessageId]) -> int:
        """Delete messages by id from every mailbox of ``user`` that holds them."""
        self._guard()
        removed = 0
        for message_id in message_ids:
            by_mailbox: dict[MailboxId, list[MessageMetadata]] = {}
            for m in self.messages.find_by_message_id(message_id):
                by_mailbox.setdefault(m.mailbox_id, []).append(m)
            targets = [(mailbox, rows) for mailbox_id, rows in by_mailbox.items()
                       if (mailbox := self.mailboxes.find_by_id(mailbox_id)) is not None and mailbox.path.user == user]
            self._before_deletion([(m, mailbox) for mailbox, rows in targets for m in rows])
            for mailbox, rows in targets:
                mailbox_id = mailbox.id
                for m in rows:
                    self.messages.delete(m)
                    removed += 1
                self.events.dispatch(Expunged(user=user, path=mailbox.path, mailbox_id=mailbox_id,
                                              expunged=_for_event(rows)))
        return removed


def _for_event(messages: list[MessageMetadata]) -> tuple[EventMessageMetadata, ...]:
    """What an Added or Expunged event carries of stored messages."""
    return tuple(m.for_event() for m in messages)


class _Concatenated(io.RawIOBase):
    """Blob streams read one after the other, each opened only when the previous one is exhausted."""

    def __init__(self, openers: list[Callable[[], BinaryIO | BlobStream]]) -> None:
        super().__init__()
        self._openers = list(openers)
        self._current: BinaryIO | BlobStream | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while True:
            if self._current is None:
                if not self._openers:
                    return 0
                self._current = self._openers.pop(0)()
            data = self._current.read(len(view))
            if data:
                view[:len(data)] = data
                return len(data)
            self._current.close()
            self._current = None

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None
        self._openers.clear()
        super().close()


def _uid_validity() -> int:
    # RFC 3501: non-zero 32-bit value that must change when uids are reassigned; random is what James does.
    return random.randint(1, 2**31 - 1)  # noqa: S311 - not a secret
