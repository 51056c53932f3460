"""``RecipientRewriteTable`` on James's ``rrt`` (truth) and ``mappings_sources`` (its projection).

``rrt``: PK ``user`` (local part or ``*``), CK ``domain`` (or ``*``), ``mapping``
(``Mapping.as_string()``). ``mappings_sources``: PK (``mapping_type`` = prefix with its colon,
empty for Address; ``mapping_value``), CK ``source`` = ``user@domain``.

Write order, as James's CassandraRecipientRewriteTable: ``rrt`` first, then ``mappings_sources``;
removal in the same order. A failure between the two leaves the projection behind the truth
(a reverse lookup misses a source, or lists a removed one); ``rrt`` is never wrong, and the
projection is rebuilt from it by the "solve mappings sources inconsistencies" task.
"""

from __future__ import annotations

from collections.abc import Iterable

from mailserver.cassandra.session import CassandraSession
from mailserver.domains.api import DomainList
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource


class CassandraRecipientRewriteTable(RecipientRewriteTable):
    def __init__(self, session: CassandraSession, domains: DomainList | None = None) -> None:
        super().__init__(domains)
        self.s = session

    def _store(self, source: MappingSource, mapping: Mapping) -> None:
        self.s.execute("INSERT INTO rrt (user, domain, mapping) VALUES (?, ?, ?)",
                       (source.user, source.domain, mapping.as_string()))
        self.s.execute("INSERT INTO mappings_sources (mapping_type, mapping_value, source) VALUES (?, ?, ?)",
                       (mapping.type.prefix, mapping.value, source.as_string()))

    def _delete(self, source: MappingSource, mapping: Mapping) -> None:
        self.s.execute("DELETE FROM rrt WHERE user = ? AND domain = ? AND mapping = ?",
                       (source.user, source.domain, mapping.as_string()))
        self.s.execute("DELETE FROM mappings_sources WHERE mapping_type = ? AND mapping_value = ? AND source = ?",
                       (mapping.type.prefix, mapping.value, source.as_string()))

    def _stored(self, source: MappingSource) -> Iterable[Mapping]:
        rows = self.s.execute("SELECT mapping FROM rrt WHERE user = ? AND domain = ?", (source.user, source.domain))
        return [Mapping.stored(row["mapping"]) for row in rows]

    def _sources(self, mapping: Mapping) -> Iterable[MappingSource]:
        rows = self.s.execute("SELECT source FROM mappings_sources WHERE mapping_type = ? AND mapping_value = ?",
                              (mapping.type.prefix, mapping.value))
        return [MappingSource.stored(row["source"]) for row in rows]

    def _all(self) -> Iterable[tuple[MappingSource, Mapping]]:
        rows = self.s.execute("SELECT user, domain, mapping FROM rrt")
        return [(MappingSource(row["user"], row["domain"]), Mapping.stored(row["mapping"])) for row in rows]
