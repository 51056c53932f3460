"""The selected mailbox of a session: sequence number <-> uid map and what changed since last told.

The session knows each message's metadata as it last reported it. Changes are noted as they are
learnt, from the mailbox's events (``note_expunged``, ``note_flags``, ``note_added``) or from a
fresh listing (``apply``, after the event bus lost events), and ``report`` returns the untagged
responses RFC 3501 §7.3-7.4 asks for: EXPUNGE (each one shifts the numbers after it, so they are
sent in ascending order, each after the removal of the previous), EXISTS and RECENT for new
messages, FETCH FLAGS for flags changed elsewhere.

EXPUNGE must not be sent during FETCH, STORE and SEARCH (RFC 3501 §7.4.1): those commands report
with ``expunges=False``; the vanished messages stay numbered until a later command.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import replace

from mailserver.imap.qresync import runs, vanished_lines
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
        self._added: list[MessageMetadata] = []   # new messages, not yet announced (ascending uids)
        self._told_flags: dict[int, MessageMetadata] = {}   # uid -> as last told, for flags changed since
        self.arrived_recent: list[int] = []   # reported as \\Recent: for the session to claim
        # ``state`` as read from storage (False: estimated from events, a resync lists the mailbox)
        self.state_exact = True

    def keep_recent(self, previous: SelectedMailbox) -> None:
        """SELECT of the mailbox this session already has selected: the messages it was told are
        \\Recent stay so (James keeps the selected mailbox, and its recent set, on such a SELECT)."""
        if previous.mailbox.id == self.mailbox.id:
            self.recent |= previous.recent & set(self.uids)

    @property
    def current_mailbox(self) -> Mailbox:
        """The mailbox under the path it has now (a rename, learnt from its event, changes the path)."""
        if self.mailbox.path != self.path:
            self.mailbox = replace(self.mailbox, path=self.path)
        return self.mailbox

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
        """This session's own STORE: remember the new flags so they are not announced again (a new
        keyword is, by ``announce_keywords``)."""
        for update in updates:
            current = self.known.get(update.uid)
            if current is not None:
                self.known[update.uid] = replace(current, flags=update.new_flags, mod_seq=update.mod_seq)

    def apply(self, fresh: list[MessageMetadata], state: MailboxState) -> None:
        """A fresh listing of the whole mailbox and its state: note what differs (``report`` tells it)."""
        by_uid = {m.uid: m for m in fresh}
        self.gone |= {uid for uid in self.uids if uid not in by_uid}
        self._note_flags(by_uid[uid] for uid in self.uids if uid in by_uid)
        self.note_added(fresh)
        self.state, self.state_exact = state, True

    # -- what changed, from events or a listing; told by ``report`` --------------------------------
    def moved_out(self, uids: Iterable[int]) -> None:
        """This session's MOVE took them: EXPUNGEd at the next report, without the new RECENT count an
        expunge of recent messages brings (James's MOVE sends none)."""
        moved = set(uids)
        self.gone |= moved
        self.recent -= moved

    def note_expunged(self, uids: Iterable[int]) -> None:
        self.gone |= set(uids) & self.known.keys()
        self.state_exact = False

    def is_new(self, uid: int) -> bool:
        """Whether a message of that uid would be an addition (none after it known, nor itself)."""
        last = max(self.uids[-1] if self.uids else 0, self._added[-1].uid if self._added else 0)
        return uid > last

    def note_flags(self, updates: Iterable[UpdatedFlags]) -> None:
        """Flag changes from events: only those newer than what this session knows count (an event
        may come after a listing that already had it)."""
        self._note_flags(replace(current, flags=u.new_flags, mod_seq=u.mod_seq) for u in updates
                         if (current := self.known.get(u.uid)) is not None and u.mod_seq > current.mod_seq)

    def _note_flags(self, messages: Iterable[MessageMetadata]) -> None:
        for now in messages:
            before = self.known[now.uid]
            if now.mod_seq == before.mod_seq:
                continue
            self._told_flags.setdefault(now.uid, before)
            self.known[now.uid] = now
            self.state = replace(self.state, highest_modseq=max(self.state.highest_modseq, now.mod_seq))
            self.state_exact = False

    def note_added(self, messages: Iterable[MessageMetadata]) -> None:
        """New messages (any order, known ones and those older than the last one ignored)."""
        for m in sorted(messages, key=lambda m: m.uid):
            if self.is_new(m.uid):
                self._added.append(m)
                self.state = replace(self.state, uid_next=max(self.state.uid_next, m.uid + 1),
                                     highest_modseq=max(self.state.highest_modseq, m.mod_seq))
                self.state_exact = False

    def report(self, *, expunges: bool, with_uid: bool, with_modseq: bool, vanished: bool = False) -> list[bytes]:
        """The untagged responses for what was noted, in RFC 3501's order: EXPUNGE (only where
        ``expunges`` allows; one VANISHED instead once QRESYNC is enabled, RFC 7162 3.2.10), FLAGS
        for new keywords, EXISTS and RECENT, FETCH FLAGS."""
        out: list[bytes] = []
        recent_removed = False
        removed: list[int] = []
        if expunges and self.gone:
            recent_removed = bool(self.recent & self.gone)
            for uid in sorted(self.gone):
                seq = self.seq_of(uid)
                if seq is None:
                    continue
                del self.uids[seq - 1]
                self.known.pop(uid, None)
                self.recent.discard(uid)
                self._told_flags.pop(uid, None)
                removed.append(uid)
                if not vanished:
                    out.append(b"* %d EXPUNGE\r\n" % seq)
            self.gone.clear()
            out += vanished_lines(runs(removed), earlier=False) if vanished else []
        added, self._added = self._added, []
        changed = [self.known[uid] for uid in sorted(self._told_flags, key=self.seq_of_or_zero)
                   if uid in self.known and uid not in self.gone]
        before, self._told_flags = self._told_flags, {}
        new_flags = {f for m in (*added, *changed) for f in m.flags.user} - self.user_flags
        if new_flags:
            self.user_flags |= new_flags
            out.append(self.flags_response())
        for m in added:
            self.uids.append(m.uid)
            self.known[m.uid] = m
            if m.flags.has(SystemFlag.RECENT):
                self.recent.add(m.uid)
                self.arrived_recent.append(m.uid)
        if added:
            out.append(b"* %d EXISTS\r\n" % self.exists)
        if added or recent_removed:   # as James: the recent count also changes when a recent message goes
            out.append(b"* %d RECENT\r\n" % len(self.recent))
        for m in changed:
            # Another session taking \\Recent is no news here (James finds that flag uninteresting too).
            if _shown(m) != _shown(before[m.uid]) or with_modseq:
                out.append(self.fetch_flags(m, with_uid=with_uid, with_modseq=with_modseq))
        return out

    def seq_of_or_zero(self, uid: int) -> int:
        return self.seq_of(uid) or 0

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

    def permanent_flags_response(self) -> bytes:
        return b"* OK [PERMANENTFLAGS " + applicable_flags(self.user_flags)[:-1] + b" \\*)] Flags permitted\r\n"

    def announce_keywords(self, uids: Iterable[int]) -> list[bytes]:
        """``* FLAGS`` and ``* OK [PERMANENTFLAGS]`` when the messages of ``uids`` carry a keyword not
        announced yet: sent before a STORE's FETCH lines, as James does, so the client knows the keyword."""
        new = {f for uid in uids if uid in self.known for f in self.known[uid].flags.user} - self.user_flags
        if not new:
            return []
        self.user_flags |= new
        return [self.flags_response(), self.permanent_flags_response()]


def _shown(m: MessageMetadata) -> Flags:
    return Flags(m.flags.system - {SystemFlag.RECENT}, m.flags.user)


def applicable_flags(user_flags: Iterable[str]) -> bytes:
    names = ["\\Answered", "\\Flagged", "\\Deleted", "\\Seen", "\\Draft", *sorted(user_flags)]
    return paren(n.encode("utf-8", "surrogateescape") for n in names)
