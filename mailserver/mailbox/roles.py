"""A mailbox's role and sort order, from its name as James's ``Role.from`` and ``SortOrder`` give
them: INBOX in any case, the other default names exactly, and a name starting with ``x-`` as a
role of its own.

One table for every protocol, as James's ``Role`` lives in its mailbox API: JMAP shows the role
(RFC 8621 2), IMAP the SPECIAL-USE attribute of the roles RFC 6154 names (``imap/special_use.py``).
"""

from __future__ import annotations

from mailserver.model.mailbox import INBOX, Mailbox

# James's DefaultMailboxes name -> (the role JMAP shows, sortOrder); "Spam" is shown as "junk".
ROLES: dict[str, tuple[str, int]] = {
    "Archive": ("archive", 20),
    "Drafts": ("drafts", 30),
    "Outbox": ("outbox", 40),
    "Sent": ("sent", 50),
    "Trash": ("trash", 60),
    "Spam": ("junk", 70),
    "Templates": ("templates", 80),
    "Restored-Messages": ("restored messages", 90),
}
INBOX_ROLE = ("inbox", 10)
USER_DEFINED_PREFIX = "x-"
OTHER_SORT_ORDER = 1000


def _role(name: str) -> tuple[str, int] | None:
    if name.upper() == INBOX:
        return INBOX_ROLE
    if name in ROLES:
        return ROLES[name]
    if name.startswith(USER_DEFINED_PREFIX):
        return name, OTHER_SORT_ORDER
    return None


def role_of_name(name: str) -> str | None:
    """The role of the user's own mailbox called ``name`` (its path name, not the wire form)."""
    found = _role(name)
    return found[0] if found else None


def role_of(mailbox: Mailbox) -> str | None:
    return role_of_name(mailbox.path.name)


def sort_order_of(mailbox: Mailbox) -> int:
    found = _role(mailbox.path.name)
    return found[1] if found else OTHER_SORT_ORDER
