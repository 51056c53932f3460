"""A read cache in front of a domain list (James's domain list ``read.cache.enable`` / ``read.cache.expiracy``).

Why: every mail asks whether its recipients' domains are local several times (SMTP at RCPT, the
``RecipientIsLocal`` matcher, LocalDelivery, the users repository's virtual-hosting check),
each a Cassandra read; the list changes a few times a year. Answers, yes or no, are kept for
``ttl`` seconds.

What another node changes is seen here within ``ttl``; what this process changes through the
cache is seen at once (the entry is dropped). ``list`` is never cached (WebAdmin shows the truth).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from cachetools import TTLCache

from mailserver.domains.api import DomainList, as_domain
from mailserver.model.address import Domain

DEFAULT_TTL_SECONDS = 10.0
MAX_ENTRIES = 10_000


class CachedDomainList(DomainList):
    def __init__(self, inner: DomainList, *, ttl: float = DEFAULT_TTL_SECONDS, max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ttl <= 0:
            raise ValueError("the domain cache's time to live must be positive (disable the cache instead)")
        self.inner = inner
        self._answers: TTLCache[Domain, bool] = TTLCache(maxsize=max_entries, ttl=ttl, timer=clock)
        self._lock = threading.Lock()

    def contains(self, domain: Domain | str) -> bool:
        d = as_domain(domain)
        with self._lock:
            known = self._answers.get(d)
        if known is not None:
            return known
        answer = self.inner.contains(d)
        with self._lock:
            self._answers[d] = answer
        return answer

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
        with self._lock:
            self._answers.pop(domain, None)

    # The storage primitives are the inner list's: add/remove/contains/list above never reach them.
    def _insert(self, domain: Domain) -> bool:
        return self.inner._insert(domain)

    def _delete(self, domain: Domain) -> bool:
        return self.inner._delete(domain)

    def _exists(self, domain: Domain) -> bool:
        return self.inner._exists(domain)

    def _all(self) -> Iterable[Domain]:
        return self.inner._all()
