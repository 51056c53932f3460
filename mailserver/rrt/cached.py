"""The mappings of a source, remembered for a few seconds (``MAILSERVER_RRT_READ_CACHE_MS``).

Why: every mail's recipients are resolved through the table (at RCPT, to refuse unknown
recipients, and by the RecipientRewriteTable mailet), two reads each for an address without
mappings (the address, then ``*@domain``), and the table changes rarely.

Answers are kept, empty ones too, for ``ttl`` seconds: a mapping added or removed on another node
applies here within that time; added or removed through this process, at once (the source's
entry is dropped). Listings (``get_all_mappings``, ``list_sources``) are never cached.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from mailserver.read_cache import ReadThroughCache
from mailserver.rrt.api import RecipientRewriteTable, SourceLike
from mailserver.rrt.mapping import Mapping, MappingSource, as_source

DEFAULT_TTL_SECONDS = 10.0
MAX_ENTRIES = 100_000


class CachedRecipientRewriteTable(RecipientRewriteTable):
    def __init__(self, inner: RecipientRewriteTable, *, ttl: float = DEFAULT_TTL_SECONDS,
                 max_entries: int = MAX_ENTRIES, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(inner.domains)
        self.inner = inner
        self._mappings: ReadThroughCache[MappingSource, tuple[Mapping, ...]] = ReadThroughCache(
            ttl=ttl, max_entries=max_entries, clock=clock, what="recipient rewrite table cache")

    def get_stored_mappings(self, source: SourceLike) -> list[Mapping]:
        return list(self._mappings.get(as_source(source), lambda s: tuple(self.inner.get_stored_mappings(s))))

    # The storage primitives are the inner table's; a write drops what was remembered of its source.
    def _store(self, source: MappingSource, mapping: Mapping) -> None:
        try:
            self.inner._store(source, mapping)
        finally:
            self._mappings.forget(source)

    def _delete(self, source: MappingSource, mapping: Mapping) -> None:
        try:
            self.inner._delete(source, mapping)
        finally:
            self._mappings.forget(source)

    def _stored(self, source: MappingSource) -> Iterable[Mapping]:
        return self.inner._stored(source)

    def _sources(self, mapping: Mapping) -> Iterable[MappingSource]:
        return self.inner._sources(mapping)

    def _all(self) -> Iterable[tuple[MappingSource, Mapping]]:
        return self.inner._all()
