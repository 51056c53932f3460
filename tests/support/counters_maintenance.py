"""Wrong mailbox counters, produced where production produces them: a failed ``mailboxCounters`` update.

The message store writes ``imapUidTable``, ``messageIdTable``, the index tables and *then* the
counters, so failing the counter UPDATE of an append, a flag change or an expunge leaves every
table right but the counters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.cassandra_messages import CassandraMessageStore
from mailserver.model.flags import Flags, SystemFlag
from mailserver.model.ids import MailboxId
from tests.support.maintenance import SeededMail, fail_once, metadata


@dataclass
class BrokenCounters:
    counters: list[MailboxId] = field(default_factory=list)      # only the counter write failed
    projection: list[MailboxId] = field(default_factory=list)    # an expunge stopped before messageIdTable


def break_counters(session: CassandraSession, seeded: SeededMail, *, appends: int, flag_changes: int,
                   expunges: int, projection_orphans: int = 0) -> BrokenCounters:
    """One fault per mailbox, in distinct mailboxes (so the number of wrong mailboxes is the sum).

    ``projection_orphans``: expunges whose ``messageIdTable`` delete fails (the counters are then
    right for the projection, wrong for the truth: only a run that checks ``imapUidTable`` sees it).
    """
    store = CassandraMessageStore(session)
    mailboxes = iter(list(seeded.by_mailbox))
    broken = BrokenCounters()
    for i in range(appends):
        mailbox = next(mailboxes)
        m = metadata(mailbox, 10_000 + i)
        fail_once(session, "mailboxCounters", "UPDATE", lambda m=m: store.add(m))
        seeded.by_mailbox[mailbox].append(m)
        broken.counters.append(mailbox)
    for _ in range(flag_changes):
        mailbox = next(mailboxes)
        messages = seeded.by_mailbox[mailbox]
        i, old = next((i, m) for i, m in enumerate(messages) if not m.flags.has(SystemFlag.SEEN))
        new = old.with_flags(Flags.of(SystemFlag.SEEN), old.mod_seq + 1)
        fail_once(session, "mailboxCounters", "UPDATE", lambda old=old, new=new: store.update_flags(old, new))
        messages[i] = new
        broken.counters.append(mailbox)
    for table, count, into in (("mailboxCounters", expunges, broken.counters),
                               ("messageIdTable", projection_orphans, broken.projection)):
        kind = "UPDATE" if table == "mailboxCounters" else "DELETE"
        for _ in range(count):
            mailbox = next(mailboxes)
            victim = seeded.by_mailbox[mailbox].pop()
            fail_once(session, table, kind, lambda v=victim: store.delete(v))
            into.append(mailbox)
    return broken


def stored_counters(session: CassandraSession) -> dict:
    return {r["mailboxid"]: (r["count"], r["unseen"])
            for r in session.execute("SELECT mailboxid, count, unseen FROM mailboxCounters")}


def _per_mailbox(session: CassandraSession, seen_flags: Iterable[tuple[Any, bool]]) -> dict:
    """(count, unseen) of every mailbox from (mailbox id, \\Seen) pairs; mailboxes with none get (0, 0)."""
    counts: Counter = Counter()
    unseen: Counter = Counter()
    for mailbox_id, seen in seen_flags:
        counts[mailbox_id] += 1
        unseen[mailbox_id] += 0 if seen else 1
    return {r["id"]: (counts[r["id"]], unseen[r["id"]]) for r in session.execute("SELECT id FROM mailbox")}


def counters_from_truth(session: CassandraSession) -> dict:
    """(count, unseen) of every mailbox from ``imapUidTable``, with CQL (the test's own computation)."""
    return _per_mailbox(session, ((r["mailboxid"], r["flagseen"])
                                  for r in session.execute("SELECT mailboxid, flagseen FROM imapUidTable")))


def counters_from_listing(session: CassandraSession) -> dict:
    """(count, unseen) of every mailbox as James recomputes them, with CQL: the mailbox's
    ``messageIdTable`` rows that ``imapUidTable`` also has, with the truth's ``\\Seen``. A message the
    projection lacks is not counted (solving message inconsistencies first lists it)."""
    truth = {(r["mailboxid"], r["uid"], r["messageid"]): r["flagseen"]
             for r in session.execute("SELECT mailboxid, uid, messageid, flagseen FROM imapUidTable")}
    listed = ((r["mailboxid"], r["uid"], r["messageid"])
              for r in session.execute("SELECT mailboxid, uid, messageid FROM messageIdTable"))
    return _per_mailbox(session, ((key[0], truth[key]) for key in listed if key in truth))


def counters_match_truth(session: CassandraSession) -> None:
    stored = stored_counters(session)
    assert {k: stored.get(k, (0, 0)) for k in counters_from_truth(session)} == counters_from_truth(session)
