"""The STATUS data items this server answers (RFC 3501 6.3.10, RFC 7162 HIGHESTMODSEQ): for STATUS
and for LIST's ``RETURN (STATUS (...))`` (RFC 5819)."""

from __future__ import annotations

from mailserver.imap.parser import ParseError, Token

STATUS_ITEMS = frozenset({"MESSAGES", "RECENT", "UIDNEXT", "UIDVALIDITY", "UNSEEN", "HIGHESTMODSEQ"})


def parse_status_items(tokens: list[Token]) -> list[str]:
    """The items asked, upper-cased, in the order asked; BAD for an unknown one or none."""
    items = [str(token).upper() for token in tokens]
    unknown = [item for item in items if item not in STATUS_ITEMS]
    if unknown or not items:
        raise ParseError(f"unknown STATUS item(s) {' '.join(unknown)}" if unknown else "STATUS needs items")
    return items
