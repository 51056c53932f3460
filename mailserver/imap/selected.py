"""The selected mailbox of a session: sequence number <-> uid map and what changed since last told.

The session knows each message's metadata as it last reported it. ``apply`` compares that with
a fresh listing and returns the untagged responses RFC 3501 §7.3-7.4 asks for: EXPUNGE (each one
shifts the numbers after it, so they are sent in ascending order, each after the removal of the
previous), EXISTS and RECENT for new messages, FETCH FLAGS for flags changed elsewhere.

EXPUNGE must not be sent during FETCH, STORE and SEARCH (RFC 3501 §7.4.1): those commands call
``apply(..., expunges=False)``; the vanished messages stay numbered until a later command.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import replace

from mailserver.imap.response import flag_list, number, paren
from mailserver.mailbox.manager import MailboxState
from mailserver.model.events import UpdatedFlags
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.mailbox import Mailbox, MailboxPath
from mailserver.model.message import MessageMetadata


class SelectedMailbox:
    def __init__(self, mailbox: Mailbox, path: MailboxPath, *, read_only: bool, messages: list[MessageMetadata],
                 state: MailboxState, recent: Iterable[int] = ()) -> None:
        self.mailbox = mailbox
        self.path = path
        self.read_only = read_only
        self.uids: list[int] = [m.uid for m in messages]
        self.known: dict[int, MessageMetadata] = {m.uid: m for m in messages}
        self.state = state
        self.recent: set[int] = set(recent)
        self.user_flags: set[str] = {f for m in messages for f in m.flags.user}
        self.gone: set[int] = set()     # expunged elsewhere, not yet announced

    def keep_recent(self, previous: SelectedMailbox) -> None:
        """SELECT of the mailbox this session already has selected: the messages it was told are
        \\Recent stay so (James keeps the selected mailbox, and its recent set, on such a SELECT)."""
        if previous.mailbox.id == self.mailbox.id:
            self.recent |= previous.recent & set(self.uids)

    # -- numbering ---------------------------------------------------------------------------
    @property
    def exists(self) -> int:
        return len(self.uids)

    def seq_of(self, uid: int) -> int | None:
        i = bisect.bisect_left(self.uids, uid)
        return i + 1 if i < len(self.uids) and self.uids[i] == uid else None

    def uid_at(self, seq: int) -> int:
        return self.uids[seq - 1]

    def first_unseen(self) -> int | None:
        for seq, uid in enumerate(self.uids, start=1):
            if not self.known[uid].flags.has(SystemFlag.SEEN):
                return seq
        return None

    # -- updates -----------------------------------------------------------------------------
    def flags_updated(self, updates: Iterable[UpdatedFlags]) -> None:
        """This session's own STORE: remember the new flags so they are not announced again."""
        for update in updates:
            current = self.known.get(update.uid)
            if current is not None:
                self.known[update.uid] = replace(current, flags=update.new_flags, mod_seq=update.mod_seq)
                self.user_flags |= set(update.new_flags.user)

    def apply(self, fresh: list[MessageMetadata], state: MailboxState, *, expunges: bool, with_uid: bool,
              with_modseq: bool) -> list[bytes]:
        out: list[bytes] = []
        by_uid = {m.uid: m for m in fresh}
        self.gone |= {uid for uid in self.uids if uid not in by_uid}
        recent_removed = False
        if expunges and self.gone:
            recent_removed = bool(self.recent & self.gone)
            for uid in sorted(self.gone):
                seq = self.seq_of(uid)
                if seq is None:
                    continue
                del self.uids[seq - 1]
                self.known.pop(uid, None)
                self.recent.discard(uid)
                out.append(b"* %d EXPUNGE\r\n" % seq)
            self.gone.clear()
        last = self.uids[-1] if self.uids else 0
        added = [m for m in fresh if m.uid > last and m.uid not in self.known]
        new_flags = {f for m in fresh for f in m.flags.user} - self.user_flags
        if new_flags:
            self.user_flags |= new_flags
            out.append(self.flags_response())
        changed = []
        for uid in self.uids:
            now = by_uid.get(uid)
            before = self.known[uid]
            if now is None or now.mod_seq == before.mod_seq:
                continue
            self.known[uid] = now
            # Another session taking \\Recent is no news here (James finds that flag uninteresting too).
            if _shown(now) != _shown(before) or with_modseq:
                changed.append(now)
        for m in added:
            self.uids.append(m.uid)
            self.known[m.uid] = m
            if m.flags.has(SystemFlag.RECENT):
                self.recent.add(m.uid)
        if added:
            out.append(b"* %d EXISTS\r\n" % self.exists)
        if added or recent_removed:   # as James: the recent count also changes when a recent message goes
            out.append(b"* %d RECENT\r\n" % len(self.recent))
        for m in changed:
            out.append(self.fetch_flags(m, with_uid=with_uid, with_modseq=with_modseq))
        self.state = state
        return out

    def fetch_flags(self, m: MessageMetadata, *, with_uid: bool, with_modseq: bool) -> bytes:
        seq = self.seq_of(m.uid)
        items = [b"FLAGS " + flag_list(m.flags, recent=m.uid in self.recent)]
        if with_uid:
            items.append(b"UID " + number(m.uid))
        if with_modseq:
            items.append(b"MODSEQ (" + number(m.mod_seq) + b")")
        return b"* %d FETCH " % (seq or 0) + paren(items) + b"\r\n"

    def flags_response(self) -> bytes:
        return b"* FLAGS " + applicable_flags(self.user_flags) + b"\r\n"


def _shown(m: MessageMetadata) -> Flags:
    return Flags(m.flags.system - {SystemFlag.RECENT}, m.flags.user)


def applicable_flags(user_flags: Iterable[str]) -> bytes:
    names = ["\\Answered", "\\Flagged", "\\Deleted", "\\Seen", "\\Draft", *sorted(user_flags)]
    return paren(n.encode("utf-8", "surrogateescape") for n in names)
