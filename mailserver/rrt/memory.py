"""In-memory ``RecipientRewriteTable``: a set of (source, mapping) pairs, reverse lookup by scan."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from mailserver.domains.api import DomainList
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource


class MemoryRecipientRewriteTable(RecipientRewriteTable):
    def __init__(self, domains: DomainList | None = None,
                 rows: Iterable[tuple[MappingSource, Mapping]] = ()) -> None:
        """``rows``: pairs held from the start, as stored (not validated: rows another writer left)."""
        super().__init__(domains)
        self._pairs: set[tuple[MappingSource, Mapping]] = set(rows)
        self._lock = threading.Lock()

    def _store(self, source: MappingSource, mapping: Mapping) -> None:
        with self._lock:
            self._pairs.add((source, mapping))

    def _delete(self, source: MappingSource, mapping: Mapping) -> None:
        with self._lock:
            self._pairs.discard((source, mapping))

    def _stored(self, source: MappingSource) -> Iterable[Mapping]:
        with self._lock:
            return [m for s, m in self._pairs if s == source]

    def _sources(self, mapping: Mapping) -> Iterable[MappingSource]:
        with self._lock:
            return [s for s, m in self._pairs if m == mapping]

    def _all(self) -> Iterable[tuple[MappingSource, Mapping]]:
        with self._lock:
            return list(self._pairs)
