"""Query states (RFC 8620 5.5) read from what the mailbox manager keeps: they change whenever the
data a query covers changes. Fingerprints, not change logs: ``/queryChanges`` is not served (James
cannot calculate query changes either). Object states are the change logs' (``CallContext``)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from mailserver.mailbox.manager import MailboxManager, MailboxState
from mailserver.model.mailbox import Mailbox

StateOf = Callable[[Mailbox], MailboxState]


def _fingerprint(mailboxes: list[Mailbox], state_of: StateOf, row: Callable[[Mailbox, MailboxState], str]) -> str:
    rows = [row(m, state_of(m)) for m in sorted(mailboxes, key=lambda m: str(m.id))]
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def mailbox_state(mailboxes: list[Mailbox], state_of: StateOf) -> str:
    """Changes with any mailbox created, renamed or deleted, and with its counts."""
    return _fingerprint(mailboxes, state_of, lambda m, s: f"{m.id} {m.path.name} {s.count} {s.unseen}")


def email_state(manager: MailboxManager, mailboxes: list[Mailbox]) -> str:
    """Changes with any append, flag change or expunge: each mailbox's highest modseq and next uid."""
    return _fingerprint(mailboxes, lambda m: manager.mailbox_state(m.path),
                        lambda m, s: f"{m.id} {s.highest_modseq} {s.uid_next}")
