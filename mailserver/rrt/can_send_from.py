"""Who may send from which address (James's ``CanSendFrom`` over ``AliasReverseResolver``).

A user may send from their own address, from every alias that leads to it (``alias:`` mappings,
followed back up to ``max_loops`` levels), and from each of those at every domain that is a
domain alias of its domain. Anything else is refused: JMAP submission is no open relay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from mailserver.model.address import Domain, InvalidAddress, MailAddress, Username
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping

MAX_LOOPS = 10   # James's mapping limit
T = TypeVar("T")


class CanSendFrom:
    def __init__(self, rrt: RecipientRewriteTable, max_loops: int = MAX_LOOPS) -> None:
        self.rrt, self.max_loops = rrt, max_loops

    def __call__(self, user: Username, address: MailAddress) -> bool:
        if str(address).lower() == str(user).lower():
            return True
        try:
            return str(address).lower() in {str(a).lower() for a in self.addresses(user)}
        except InvalidAddress:
            return False

    def addresses(self, user: Username) -> set[MailAddress]:
        """Every address the user may send from."""
        found: set[MailAddress] = set()
        for alias in self._aliases(MailAddress.of(str(user))):
            found.add(alias)
            found.update(MailAddress.of(f"{alias.local_part}@{d.name}") for d in self._domain_aliases(alias.domain))
        return found

    def _aliases(self, address: MailAddress) -> set[MailAddress]:
        def sources(target: MailAddress) -> Iterator[MailAddress]:
            for source in self.rrt.list_sources(Mapping.alias(target)):
                alias = source.as_mail_address()
                if alias is not None:
                    yield alias
        return {address} | self._followed_back(address, sources)

    def _domain_aliases(self, domain: Domain) -> set[Domain]:
        def sources(target: Domain) -> Iterator[Domain]:
            for source in self.rrt.list_sources(Mapping.domain_alias(target)):
                alias = source.domain_part()
                if source.is_domain and alias is not None:
                    yield alias
        return self._followed_back(domain, sources)

    def _followed_back(self, start: T, sources: Callable[[T], Iterator[T]]) -> set[T]:
        """What leads to ``start`` through mappings, level by level, at most ``max_loops`` levels."""
        seen: set[T] = set()
        frontier = [start]
        for _ in range(self.max_loops):
            next_frontier = []
            for target in frontier:
                for found in sources(target):
                    if found != start and found not in seen:
                        seen.add(found)
                        next_frontier.append(found)
            if not next_frontier:
                break
            frontier = next_frontier
        return seen
