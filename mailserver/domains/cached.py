"""A read cache in front of a domain list (James's domain list ``read.cache.enable`` / ``read.cache.expiracy``).

Why: every mail asks whether its recipients' domains are local several times (SMTP at RCPT, the
``RecipientIsLocal`` matcher, LocalDelivery, the users repository's virtual-hosting check),
each a Cassandra read; the list changes a few times a year. Answers, yes or no, are kept for
``ttl`` seconds.

What another node changes is seen here within ``ttl``; what this process changes through the
cache is seen at once (the entry is dropped). ``list`` is never cached (WebAdmin shows the truth).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from mailserver.domains.api import DomainList, as_domain
from mailserver.model.address import Domain
from mailserver.read_cache import ReadThroughCache

DEFAULT_TTL_SECONDS = 10.0
MAX_ENTRIES = 10_000


class CachedDomainList(DomainList):
    def __init__(self, inner: DomainList, *, ttl: float = DEFAULT_TTL_SECONDS, max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self._answers: ReadThroughCache[Domain, bool] = ReadThroughCache(
            ttl=ttl, max_entries=max_entries, clock=clock, what="domain cache")

    def contains(self, domain: Domain | str) -> bool:
        return self._answers.get(as_domain(domain), self.inner.contains)

    def add(self, domain: Domain | str) -> Domain:
        d = as_domain(domain)
        try:
            return self.inner.add(d)
        finally:
            self._forget(d)

    def remove(self, domain: Domain | str) -> None:
        d = as_domain(domain)
        try:
            self.inner.remove(d)
        finally:
            self._forget(d)

    def list(self) -> list[Domain]:
        return self.inner.list()

    def _forget(self, domain: Domain) -> None:
        self._answers.forget(domain)

    # The storage primitives are the inner list's: add/remove/contains/list above never reach them.
    def _insert(self, domain: Domain) -> bool:
        return self.inner._insert(domain)

    def _delete(self, domain: Domain) -> bool:
        return self.inner._delete(domain)

    def _exists(self, domain: Domain) -> bool:
        return self.inner._exists(domain)

    def _all(self) -> Iterable[Domain]:
        return self.inner._all()
