"""Object states (RFC 8620 1.6.3) read from what the mailbox manager keeps: they change whenever
the data they cover changes. They are fingerprints, not change logs: ``/changes`` is not served."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from mailserver.mailbox.manager import MailboxManager
from mailserver.model.mailbox import Mailbox


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def mailbox_state(manager: MailboxManager, mailboxes: list[Mailbox]) -> str:
    """Changes with any mailbox created, renamed or deleted, and with its counts."""
    rows = []
    for m in sorted(mailboxes, key=lambda m: str(m.id)):
        state = manager.mailbox_state(m.path)
        rows.append(f"{m.id} {m.path.name} {state.count} {state.unseen}")
    return _digest(rows)


def email_state(manager: MailboxManager, mailboxes: list[Mailbox]) -> str:
    """Changes with any append, flag change or expunge: each mailbox's highest modseq and next uid."""
    rows = []
    for m in sorted(mailboxes, key=lambda m: str(m.id)):
        state = manager.mailbox_state(m.path)
        rows.append(f"{m.id} {state.highest_modseq} {state.uid_next}")
    return _digest(rows)
