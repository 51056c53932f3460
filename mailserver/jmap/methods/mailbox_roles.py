"""A mailbox's role (RFC 8621 2, the IANA registry) and sort order, from its name as James does."""

from __future__ import annotations

from mailserver.model.mailbox import DELIMITER, INBOX, Mailbox

# Top-level names James creates by default -> (role, sortOrder).
ROLES: dict[str, tuple[str, int]] = {
    INBOX.lower(): ("inbox", 10),
    "archive": ("archive", 20),
    "drafts": ("drafts", 30),
    "sent": ("sent", 50),
    "trash": ("trash", 60),
    "spam": ("junk", 70),
}
OTHER_SORT_ORDER = 1000


def role_of(mailbox: Mailbox) -> str | None:
    name = mailbox.path.name
    if DELIMITER in name:
        return None
    found = ROLES.get(name.lower())
    return found[0] if found else None


def sort_order_of(mailbox: Mailbox) -> int:
    name = mailbox.path.name
    found = None if DELIMITER in name else ROLES.get(name.lower())
    return found[1] if found else OTHER_SORT_ORDER
