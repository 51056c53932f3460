"""In-memory ``DomainList`` for unit tests and single-process use."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from mailserver.domains.api import DomainList
from mailserver.model.address import Domain


class MemoryDomainList(DomainList):
    def __init__(self, domains: Iterable[Domain | str] = ()) -> None:
        self._domains: set[Domain] = set()
        self._lock = threading.Lock()
        for domain in domains:
            self.add(domain)

    def _insert(self, domain: Domain) -> bool:
        with self._lock:
            if domain in self._domains:
                return False
            self._domains.add(domain)
            return True

    def _delete(self, domain: Domain) -> bool:
        with self._lock:
            if domain not in self._domains:
                return False
            self._domains.discard(domain)
            return True

    def _exists(self, domain: Domain) -> bool:
        with self._lock:
            return domain in self._domains

    def _all(self) -> Iterable[Domain]:
        with self._lock:
            return list(self._domains)
