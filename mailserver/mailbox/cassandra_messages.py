"""Message storage on James's tables, in James's write order (CassandraMessageMapper).

add:    imapUidTable (truth, LWT) -> messageIdTable (projection) with the index tables, one batch -> counters
flags:  imapUidTable ``IF modSeq = old`` (LWT) -> messageIdTable -> index tables and counters
delete: imapUidTable -> messageIdTable -> index tables and counters
A failure between two of these writes leaves exactly the inconsistencies the operator guide
describes, which the maintenance procedures then repair.
"""

from __future__ import annotations

import builtins
import hashlib
import threading
import uuid
from collections import OrderedDict
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from mailserver.cassandra.session import CassandraSession
from mailserver.group_commit import GroupCommit
from mailserver.mailbox.errors import ConcurrentModification
from mailserver.mailbox.recent_contents import RecentContents
from mailserver.mailbox.store import MailboxCounters, MessageStore
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId, MessageId
from mailserver.model.message import Attachment, MessageContent, MessageMetadata

FLAG_COLUMNS = {flag: "flag" + flag.value for flag in SystemFlag}  # flagSeen, ... (stored lower-cased)
# The per-mailbox lists of the messages carrying a flag: (table, uid column).
FLAG_INDEXES = {SystemFlag.DELETED: ("messageDeleted", "uid"),
                SystemFlag.RECENT: ("mailboxRecents", "recent_mesage_uid")}
INDEX_WRITES = 100   # rows of one rebuild sent together
METADATA_COLUMNS = ["threadId", "modSeq", *FLAG_COLUMNS.values(), "flagUser", "userFlags", "internalDate",
                    "save_date", "bodyStartOctet", "fullContentOctets", "headerContent"]
LWT_RETRIES = 100
COUNT = "UPDATE mailboxCounters SET count = count + ?, unseen = unseen + ? WHERE mailboxId = ?"
LAST_ALLOCATED_KEPT = 10_000   # mailboxes whose last uid/modseq this process remembers
ALLOCATION_STRIPES = 64        # in-process group commits that queue the allocations of one mailbox
ALLOCATION_BATCH_MAX = 256     # values one compare-and-set reserves for the threads asking together


@dataclass(frozen=True)
class _Ask:
    key: tuple[str, object]
    table: str
    column: str
    mailbox_id: MailboxId
    count: int


def metadata_values(m: MessageMetadata) -> list:
    flags = [m.flags.has(flag) for flag in FLAG_COLUMNS]
    return [m.thread_id.value, m.mod_seq, *flags, bool(m.flags.user), set(m.flags.user) or None,
            m.internal_date, m.save_date, m.body_start_octet, m.size, m.header_blob_id]


_FLAG_KEYS = tuple((flag, column.lower()) for flag, column in FLAG_COLUMNS.items())   # the driver's row keys
# A mailbox listing without its partition key: SELECT re-reads every message, so the rows are decoded
# without the mailbox id (one UUID fewer a row) and with the Flags of equal rows shared.
LISTING_COLUMNS = ", ".join(["messageId", "uid", *METADATA_COLUMNS])


def row_to_metadata(row: dict, mailbox_id: MailboxId | None = None,
                    flags_seen: dict[tuple, Flags] | None = None) -> MessageMetadata:
    """A row of imapUidTable or messageIdTable; ``mailbox_id`` when the query did not read it.

    ``flags_seen`` shares one ``Flags`` between rows with the same flags (a listing has few distinct ones).
    """
    user = row.get("userflags") or ()
    key = (*(bool(row.get(column)) for _, column in _FLAG_KEYS), *user)
    flags = flags_seen.get(key) if flags_seen is not None else None
    if flags is None:
        flags = Flags(frozenset(flag for flag, column in _FLAG_KEYS if row.get(column)), frozenset(user))
        if flags_seen is not None:
            flags_seen[key] = flags
    message_id = MessageId(row["messageid"])
    thread = row["threadid"]
    return MessageMetadata(
        mailbox_id=mailbox_id if mailbox_id is not None else MailboxId(row["mailboxid"]), message_id=message_id,
        uid=row["uid"], mod_seq=row["modseq"], flags=flags,
        thread_id=message_id if thread is None or thread == message_id.value else MessageId(thread),
        internal_date=row["internaldate"], save_date=row.get("save_date"), body_start_octet=row["bodystartoctet"],
        size=row["fullcontentoctets"], header_blob_id=row["headercontent"])


class CassandraMessageStore(MessageStore):
    def __init__(self, session: CassandraSession, recent: RecentContents | None = None) -> None:
        self.s = session
        self.recent = recent if recent is not None else RecentContents()
        self._last_allocated: OrderedDict[tuple[str, object], int] = OrderedDict()
        self._allocated_lock = threading.Lock()
        # One batch at a time per stripe, so one mailbox's counter is never allocated twice at once.
        self._allocations = [GroupCommit(self._allocate_batch, max_weight=ALLOCATION_BATCH_MAX,
                                         weight=lambda ask: ask.count) for _ in range(ALLOCATION_STRIPES)]
        cols = ", ".join(METADATA_COLUMNS)
        marks = ", ".join("?" for _ in METADATA_COLUMNS)
        self._insert_imap_uid = (f"INSERT INTO imapUidTable (messageId, mailboxId, uid, {cols}) "
                                 f"VALUES (?, ?, ?, {marks}) IF NOT EXISTS")
        sets = ", ".join(f"{c} = ?" for c in METADATA_COLUMNS)
        self._update_message_id = f"UPDATE messageIdTable SET messageId = ?, {sets} WHERE mailboxId = ? AND uid = ?"
        flag_sets = ", ".join(f"{c} = ?" for c in [*FLAG_COLUMNS.values(), "flagUser", "userFlags", "modSeq"])
        self._update_imap_uid_flags = (f"UPDATE imapUidTable SET {flag_sets} WHERE messageId = ? AND mailboxId = ? "
                                       "AND uid = ? IF modSeq = ?")
        self._update_message_id_flags = f"UPDATE messageIdTable SET {flag_sets} WHERE mailboxId = ? AND uid = ?"

    # -- generators (LWT compare-and-set, as CassandraUidProvider / CassandraModSeqProvider) -----
    @property
    def allocations_waiting(self) -> int:
        """UID and MODSEQ allocations queued behind a batch in flight (a gauge of counter contention)."""
        return sum(stripe.waiting for stripe in self._allocations)

    def _allocate(self, table: str, column: str, mailbox_id: MailboxId, count: int) -> int:
        """The first of ``count`` new values of a mailbox's counter (uid or modseq).

        Compare-and-set from the value this process saw last: one Paxos round per allocation when
        nobody else allocated in between (James reads at SERIAL first: two rounds). A CAS that
        loses returns the current value, which the next attempt starts from.

        The threads of this process do not race each other for one mailbox's counter: left to race,
        N concurrent appends to one mailbox lose about N/2 rounds each, and every lost round is
        Paxos work for Cassandra. Nor do they take turns one Paxos round each: under load that
        made a mailbox's deliveries wait for one another, one round-trip of Paxos latency per
        mail (at 16 SMTP sessions to one INBOX, 42 % of the spooler threads' time and the limit
        of the whole mail flow; issue 16). Threads asking at the same time share one
        compare-and-set that reserves a range, each getting its own part of it in the order they
        asked (a group commit, ``mailserver/group_commit.py``). Other processes still race; the
        CAS keeps them correct.
        """
        key = (table, mailbox_id.value)
        allocated = self._allocations[hash(key) % ALLOCATION_STRIPES].submit(
            _Ask(key, table, column, mailbox_id, count))
        if isinstance(allocated, BaseException):
            raise allocated
        return allocated

    def _allocate_batch(self, asks: list[_Ask]) -> list[int | BaseException]:
        """One compare-and-set per counter for every ask of a batch; a counter that cannot be
        allocated fails its own asks only."""
        results: list[int | BaseException] = [0] * len(asks)
        by_key: dict[tuple[str, object], list[int]] = {}
        for i, ask in enumerate(asks):
            by_key.setdefault(ask.key, []).append(i)
        for key, positions in by_key.items():
            first = asks[positions[0]]
            try:
                value = self._allocate_in_turn(key, first.table, first.column, first.mailbox_id,
                                               sum(asks[i].count for i in positions))
            except Exception as exc:
                for i in positions:
                    results[i] = exc
                continue
            for i in positions:
                results[i] = value
                value += asks[i].count
        return results

    def _allocate_in_turn(self, key: tuple[str, object], table: str, column: str, mailbox_id: MailboxId,
                          count: int) -> int:
        current = self._last_allocated.get(key)
        for _ in range(LWT_RETRIES):
            if current is None:
                row = self.s.one(f"SELECT {column} FROM {table} WHERE mailboxId = ?", (mailbox_id.value,),
                                 strong=True)
                if row is None:
                    if self.s.execute_lwt(f"INSERT INTO {table} (mailboxId, {column}) VALUES (?, ?) IF NOT EXISTS",
                                          (mailbox_id.value, count)):
                        self._remember(key, count)
                        return 1
                    continue
                current = row[column.lower()]
            applied, seen = self.s.execute_cas(f"UPDATE {table} SET {column} = ? WHERE mailboxId = ? IF {column} = ?",
                                               (current + count, mailbox_id.value, current))
            if applied:
                self._remember(key, current + count)
                return current + 1
            current = seen.get(column.lower())   # None: no row (yet), read it at SERIAL
        self._last_allocated.pop(key, None)
        raise ConcurrentModification(f"could not allocate {column} for mailbox {mailbox_id}")

    def _remember(self, key: tuple[str, object], value: int) -> None:
        with self._allocated_lock:
            self._last_allocated[key] = value
            self._last_allocated.move_to_end(key)
            if len(self._last_allocated) > LAST_ALLOCATED_KEPT:
                self._last_allocated.popitem(last=False)

    def next_uid(self, mailbox_id: MailboxId, count: int = 1) -> int:
        return self._allocate("messageCounter", "nextUid", mailbox_id, count)

    def next_modseq(self, mailbox_id: MailboxId) -> int:
        return self._allocate("modseq", "nextModseq", mailbox_id, 1)

    def _generator(self, table: str, column: str, mailbox_id: MailboxId) -> int:
        row = self.s.one(f"SELECT {column} FROM {table} WHERE mailboxId = ?", (mailbox_id.value,))
        return (row[column.lower()] or 0) if row else 0

    def state_reads(self, mailbox_id: MailboxId) -> tuple[MailboxCounters, int, int]:
        key = (mailbox_id.value,)
        counters, uid, modseq = self.s.read_concurrently([
            ("SELECT count, unseen FROM mailboxCounters WHERE mailboxId = ?", key),
            ("SELECT nextUid FROM messageCounter WHERE mailboxId = ?", key),
            ("SELECT nextModseq FROM modseq WHERE mailboxId = ?", key)])
        return (MailboxCounters(counters[0]["count"] or 0, counters[0]["unseen"] or 0) if counters
                else MailboxCounters(0, 0),
                (uid[0]["nextuid"] or 0) if uid else 0, (modseq[0]["nextmodseq"] or 0) if modseq else 0)

    def last_uid(self, mailbox_id: MailboxId) -> int:
        return self._generator("messageCounter", "nextUid", mailbox_id)

    def highest_modseq(self, mailbox_id: MailboxId) -> int:
        return self._generator("modseq", "nextModseq", mailbox_id)

    # -- messageV3 ---------------------------------------------------------------------------
    def save_content(self, content: MessageContent) -> None:
        attachments = [(a.id, a.name, a.cid, a.is_inline) for a in content.attachments] or None
        self.s.execute("INSERT INTO messageV3 (messageId, internalDate, bodyStartOctet, bodyOctets, fullContentOctets, "
                       "bodyContent, headerContent, attachments) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (content.message_id.value, content.internal_date, content.body_start_octet, content.body_octets,
                        content.full_content_octets, content.body_blob_id, content.header_blob_id, attachments))
        for a in content.attachments:
            self.s.execute("INSERT INTO attachmentV2 (idAsUUID, id, blobId, type, message_id, size) "
                           "VALUES (?, ?, ?, ?, ?, ?)",
                           (_attachment_uuid(a.id), a.id, a.blob_id, a.content_type, content.message_id.value, a.size))
        self.recent.stage(replace(content, internal_date=_as_read_back(content.internal_date)))

    def get_content(self, message_id: MessageId) -> MessageContent | None:
        recent = self.recent.get(message_id)
        if recent is not None:
            return recent
        row = self.s.one("SELECT * FROM messageV3 WHERE messageId = ?", (message_id.value,))
        if row is None:
            return None
        attachments = []
        for a in row.get("attachments") or []:
            info = self.s.one("SELECT blobId, type, size FROM attachmentV2 WHERE idAsUUID = ?",
                              (_attachment_uuid(a.id),)) or {}
            attachments.append(Attachment(a.id, a.name, a.cid, bool(a.isinline), info.get("blobid", ""),
                                          info.get("type", "application/octet-stream"), info.get("size", 0)))
        return MessageContent(message_id, row["internaldate"], row["bodystartoctet"], row["fullcontentoctets"],
                              row["headercontent"], row["bodycontent"], tuple(attachments))

    def delete_content(self, message_id: MessageId) -> None:
        content = self.get_content(message_id)
        self.recent.forget(message_id)
        for a in content.attachments if content else ():
            self.s.execute("DELETE FROM attachmentV2 WHERE idAsUUID = ?", (_attachment_uuid(a.id),))
        self.s.execute("DELETE FROM messageV3 WHERE messageId = ?", (message_id.value,))

    # -- per-mailbox rows ------------------------------------------------------------------------
    def add(self, m: MessageMetadata) -> None:
        values = metadata_values(m)
        if not self.s.execute_lwt(self._insert_imap_uid, (m.message_id.value, m.mailbox_id.value, m.uid, *values)):
            raise ConcurrentModification(f"uid {m.uid} already used in mailbox {m.mailbox_id}")
        self.recent.keep(m.message_id)   # referenced by imapUidTable now: its content row is final
        self.complete_add(m)

    def complete_add(self, m: MessageMetadata) -> None:
        # The projection row with the index rows, then the counters (James's order: projection,
        # then indexes and counters). The rows share the partition key (the mailbox id), so one
        # batch writes them as a single mutation: a copy is listed with its indexes or not at all,
        # and a copy not listed yet has no counts either, so finishing it counts it once.
        self.s.execute_partition_batch([
            (self._update_message_id, (m.message_id.value, *metadata_values(m), m.mailbox_id.value, m.uid)),
            *self._index_rows_added(m)])
        self._count(m.mailbox_id, 1, 0 if m.flags.has(SystemFlag.SEEN) else 1)

    def update_flags(self, old: MessageMetadata, new: MessageMetadata) -> bool:
        values = self._flag_values(new)
        if not self.s.execute_lwt(self._update_imap_uid_flags,
                                  (*values, old.message_id.value, old.mailbox_id.value, old.uid, old.mod_seq)):
            return False
        self.s.execute(self._update_message_id_flags, (*values, new.mailbox_id.value, new.uid))
        self._index_flags_changed(old, new)
        return True

    def delete(self, m: MessageMetadata) -> None:
        self.s.execute("DELETE FROM imapUidTable WHERE messageId = ? AND mailboxId = ? AND uid = ?",
                       (m.message_id.value, m.mailbox_id.value, m.uid))
        self.s.execute("DELETE FROM messageIdTable WHERE mailboxId = ? AND uid = ?", (m.mailbox_id.value, m.uid))
        self._index_removed(m)

    @staticmethod
    def _flag_values(m: MessageMetadata) -> list:
        return [*(m.flags.has(f) for f in FLAG_COLUMNS), bool(m.flags.user), set(m.flags.user) or None, m.mod_seq]

    # -- index tables (CassandraIndexTableHandler) ------------------------------------------------
    def _index_rows_added(self, m: MessageMetadata) -> list[tuple[str, tuple]]:
        """The index rows of an added message (CassandraIndexTableHandler), all in the mailbox's partition."""
        mailbox, uid = m.mailbox_id.value, m.uid
        writes: list[tuple[str, tuple]] = []
        if m.flags.has(SystemFlag.DELETED):
            writes.append(("INSERT INTO messageDeleted (mailboxId, uid) VALUES (?, ?)", (mailbox, uid)))
        if m.flags.has(SystemFlag.RECENT):
            writes.append(("INSERT INTO mailboxRecents (mailboxId, recent_mesage_uid) VALUES (?, ?)", (mailbox, uid)))
        if not m.flags.has(SystemFlag.SEEN):
            writes.append(("INSERT INTO firstUnseen (mailboxId, uid) VALUES (?, ?)", (mailbox, uid)))
        if m.flags.user:
            writes.append(("UPDATE applicableFlag SET userFlags = userFlags + ? WHERE mailboxId = ?",
                           (set(m.flags.user), mailbox)))
        return writes

    def _index_removed(self, m: MessageMetadata) -> None:
        mailbox, uid = m.mailbox_id.value, m.uid
        self.s.execute("DELETE FROM messageDeleted WHERE mailboxId = ? AND uid = ?", (mailbox, uid))
        self.s.execute("DELETE FROM mailboxRecents WHERE mailboxId = ? AND recent_mesage_uid = ?", (mailbox, uid))
        self.s.execute("DELETE FROM firstUnseen WHERE mailboxId = ? AND uid = ?", (mailbox, uid))
        self._count(m.mailbox_id, -1, 0 if m.flags.has(SystemFlag.SEEN) else -1)

    def _index_flags_changed(self, old: MessageMetadata, new: MessageMetadata) -> None:
        mailbox, uid = new.mailbox_id.value, new.uid
        for flag, (table, column) in FLAG_INDEXES.items():
            if new.flags.has(flag) and not old.flags.has(flag):
                self.s.execute(f"INSERT INTO {table} (mailboxId, {column}) VALUES (?, ?)", (mailbox, uid))
            elif old.flags.has(flag) and not new.flags.has(flag):
                self.s.execute(f"DELETE FROM {table} WHERE mailboxId = ? AND {column} = ?", (mailbox, uid))
        was_seen, is_seen = old.flags.has(SystemFlag.SEEN), new.flags.has(SystemFlag.SEEN)
        if was_seen and not is_seen:
            self.s.execute("INSERT INTO firstUnseen (mailboxId, uid) VALUES (?, ?)", (mailbox, uid))
            self._count(new.mailbox_id, 0, 1)
        elif is_seen and not was_seen:
            self.s.execute("DELETE FROM firstUnseen WHERE mailboxId = ? AND uid = ?", (mailbox, uid))
            self._count(new.mailbox_id, 0, -1)
        added_user_flags = new.flags.user - old.flags.user
        if added_user_flags:
            self.s.execute("UPDATE applicableFlag SET userFlags = userFlags + ? WHERE mailboxId = ?",
                           (set(added_user_flags), mailbox))

    def _count(self, mailbox_id: MailboxId, count: int, unseen: int) -> None:
        if count or unseen:
            self.s.execute(COUNT, (count, unseen, mailbox_id.value))

    # -- reads -----------------------------------------------------------------------------------
    def list(self, mailbox_id: MailboxId, uid_from: int = 1, uid_to: int | None = None) -> list[MessageMetadata]:
        rows = self.s.execute(f"SELECT {LISTING_COLUMNS} FROM messageIdTable WHERE mailboxId = ? AND uid >= ? "
                              "AND uid <= ?", (mailbox_id.value, uid_from, uid_to if uid_to is not None else 2**63 - 1))
        flags_seen: dict[tuple, Flags] = {}
        # A row without messageId is a partial write (CQL UPDATE): James drops it on read.
        return [row_to_metadata(r, mailbox_id, flags_seen) for r in rows if r.get("messageid") is not None]

    def find_by_message_id(self, message_id: MessageId, *,
                           settle_pending: bool = False) -> builtins.list[MessageMetadata]:
        # imapUidTable rows are written by an LWT (IF NOT EXISTS): one that timed out may have been
        # accepted by a single replica, invisible to a QUORUM read until its Paxos round completes.
        # A SERIAL read completes it first; without it a redelivery stored the mail a second time.
        return [row_to_metadata(r) for r in
                self.s.execute("SELECT * FROM imapUidTable WHERE messageId = ?", (message_id.value,),
                               strong=settle_pending)]

    def deleted_uids(self, mailbox_id: MailboxId) -> builtins.list[int]:
        return [r["uid"] for r in self.s.execute("SELECT uid FROM messageDeleted WHERE mailboxId = ?",
                                                 (mailbox_id.value,))]

    def counters(self, mailbox_id: MailboxId) -> MailboxCounters:
        row = self.s.one("SELECT count, unseen FROM mailboxCounters WHERE mailboxId = ?", (mailbox_id.value,))
        return MailboxCounters(row["count"] or 0, row["unseen"] or 0) if row else MailboxCounters(0, 0)

    def rebuild_flag_index(self, mailbox_id: MailboxId, flag: SystemFlag) -> int:
        """James's way: drop the mailbox's partition of the index, then list the flagged messages
        of ``messageIdTable`` in it. A flag changed meanwhile can be missed, as in James: run it
        with the traffic stopped, or again."""
        table, column = FLAG_INDEXES[flag]
        self.s.execute(f"DELETE FROM {table} WHERE mailboxId = ?", (mailbox_id.value,))
        uids = [m.uid for m in self.list(mailbox_id) if m.flags.has(flag)]
        insert = f"INSERT INTO {table} (mailboxId, {column}) VALUES (?, ?)"
        for start in range(0, len(uids), INDEX_WRITES):
            self.s.execute_concurrently([(insert, (mailbox_id.value, uid)) for uid in uids[start:start + INDEX_WRITES]])
        return len(uids)

    def clear_mailbox_indexes(self, mailbox_id: MailboxId) -> None:
        # messageCounter and modseq rows stay, as in James (a deleted id is never reused).
        for table in ("messageDeleted", "mailboxRecents", "firstUnseen", "applicableFlag", "mailboxCounters"):
            self.s.execute(f"DELETE FROM {table} WHERE mailboxId = ?", (mailbox_id.value,))


def _as_read_back(moment: datetime) -> datetime:
    """A timestamp as the driver returns it once stored: naive UTC, whole milliseconds."""
    utc = moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def _attachment_uuid(attachment_id: str) -> uuid.UUID:
    # James: UUID.nameUUIDFromBytes(utf8(id)), a type-3 (MD5) UUID without namespace.
    digest = bytearray(hashlib.md5(attachment_id.encode(), usedforsecurity=False).digest())
    digest[6] = (digest[6] & 0x0F) | 0x30
    digest[8] = (digest[8] & 0x3F) | 0x80
    return uuid.UUID(bytes=bytes(digest))
