"""SPECIAL-USE (RFC 6154) attributes of the user's mailboxes, from the role of their name.

The roles come from ``mailbox.roles`` (the table JMAP shows too); James's ``DefaultMailboxTyper``
gives an attribute to INBOX's and five other roles, and only INBOX has none in LIST (it is not an
RFC 6154 use). "Spam" is ``\\Junk``, as RFC 6154 names it.
"""

from __future__ import annotations

from mailserver.mailbox.roles import role_of_name

ATTRIBUTES = {"sent": b"\\Sent", "drafts": b"\\Drafts", "trash": b"\\Trash", "junk": b"\\Junk",
              "archive": b"\\Archive"}


def special_use(name: str) -> bytes | None:
    """The attribute of the user's mailbox ``name`` (a stored name), or None."""
    role = role_of_name(name)
    return ATTRIBUTES.get(role) if role is not None else None
