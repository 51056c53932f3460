"""The entries of a LIST reply: which names, with which attributes (RFC 3501, RFC 5258, RFC 6154).

A pure function of the user's mailbox names and subscriptions, so that every option combination
is tested without a server. It follows James's ``ListProcessor``:

* without the SUBSCRIBED selection, every mailbox and hierarchy level (``\\Noselect``) matching a
  pattern; with the SPECIAL-USE selection only those that have a special use;
* with the SUBSCRIBED selection, the subscribed names matching a pattern, a name that is no
  mailbox as ``\\NonExistent``; with RECURSIVEMATCH also the matching mailboxes that are
  ancestors of a subscription, marked ``("CHILDINFO" ("SUBSCRIBED"))``;
* attributes in James's order: ``\\Noselect``, children, special use, ``\\Subscribed``,
  ``\\NonExistent``.

The time is one pattern match per name and pattern (``ListPattern`` is linear), bounded by the
user's mailboxes and subscriptions and ``MAX_PATTERNS``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mailserver.imap.list_request import ListRequest
from mailserver.imap.names import ListPattern
from mailserver.imap.special_use import special_use
from mailserver.model.mailbox import DELIMITER


@dataclass(frozen=True)
class Entry:
    name: str
    attributes: tuple[bytes, ...]
    child_info_subscribed: bool = False
    exists: bool = True   # a selectable mailbox: the one LIST-STATUS reports on


def ancestors(name: str) -> list[str]:
    """``a.b.c`` -> ``a``, ``a.b``."""
    parts = name.split(DELIMITER)
    return [DELIMITER.join(parts[:i]) for i in range(1, len(parts))]


def list_entries(request: ListRequest, matchers: list[ListPattern], existing: Iterable[str],
                 subscribed: Iterable[str]) -> list[Entry]:
    mailboxes = set(existing)
    subscriptions = set(subscribed)
    parents = {level for name in mailboxes for level in ancestors(name)}   # every name with a child
    levels = parents - mailboxes

    def matches(name: str) -> bool:
        return any(matcher.matches(name) for matcher in matchers)

    def attributes(name: str, *, subscribed: bool) -> tuple[bytes, ...]:
        found: list[bytes] = []
        if name in levels:
            found.append(b"\\Noselect")
        found.append(b"\\HasChildren" if name in parents else b"\\HasNoChildren")
        use = special_use(name) if "SPECIAL-USE" in request.returns and name in mailboxes else None
        if use is not None:
            found.append(use)
        if subscribed:
            found.append(b"\\Subscribed")
        return tuple(found)

    special_only = "SPECIAL-USE" in request.select
    entries: list[Entry] = []
    if "SUBSCRIBED" not in request.select:
        with_subscribed = "SUBSCRIBED" in request.returns
        for name in sorted(mailboxes | levels):
            if not matches(name) or (special_only and (name in levels or special_use(name) is None)):
                continue
            entries.append(Entry(name, attributes(name, subscribed=with_subscribed and name in subscriptions),
                                 exists=name in mailboxes))
        return entries
    listed: set[str] = set()
    if "RECURSIVEMATCH" in request.select:
        subscribed_parents = {level for name in subscriptions for level in ancestors(name)}
        for name in sorted(mailboxes & subscribed_parents):
            if matches(name) and not (special_only and special_use(name) is None):
                entries.append(Entry(name, attributes(name, subscribed=name in subscriptions),
                                     child_info_subscribed=True))
                listed.add(name)
    for name in sorted(subscriptions - listed):
        if not matches(name):
            continue
        if name in mailboxes:
            if special_only and special_use(name) is None:
                continue
            entries.append(Entry(name, attributes(name, subscribed=True)))
        elif not special_only:
            entries.append(Entry(name, (b"\\Subscribed", b"\\NonExistent"), exists=False))
    return entries


def lsub_entries(subscribed: Iterable[str], matcher: ListPattern) -> list[tuple[str, bool]]:
    """LSUB's (name, \\Noselect) pairs: the subscribed names that match, and, for one that does not,
    its matching ancestors that are not subscribed themselves, \\Noselect (RFC 3501 6.3.9: "foo.bar"
    subscribed and "foo" not, LSUB "%" answers "foo" \\Noselect)."""
    names = set(subscribed)
    entries: dict[str, bool] = {}
    for name in names:
        if matcher.matches(name):
            entries[name] = False
            continue
        for parent in ancestors(name):
            if parent not in names and matcher.matches(parent):
                entries[parent] = True
    return sorted(entries.items())
