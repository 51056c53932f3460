"""RRT data for the mapping-sources procedure: mappings of every type, projections broken by the fault seam.

Mappings are written through the data layer (``CassandraRecipientRewriteTable``: ``rrt`` first,
then ``mappings_sources``); an inconsistency is the second write failing, as a node timeout
would make it fail in production.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from mailserver.cassandra.session import CassandraSession
from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource
from tests.support.maintenance import fail_once


@dataclass
class SeededMappings:
    pairs: list[tuple[MappingSource, Mapping]] = field(default_factory=list)
    missing: list[tuple[MappingSource, Mapping]] = field(default_factory=list)   # in rrt, not projected
    orphan: list[tuple[MappingSource, Mapping]] = field(default_factory=list)    # projected, gone from rrt


def seed_mappings(session: CassandraSession, *, per_type: int) -> SeededMappings:
    """``per_type`` aliases, group members, forwards, address, domain, domain-alias and regex mappings."""
    table = CassandraRecipientRewriteTable(session)
    tag = uuid.uuid4().hex[:6]
    seeded = SeededMappings()
    for i in range(per_type):
        d = f"d{i}-{tag}.tld"
        pairs = [
            (MappingSource.of(f"alias{i}", d), Mapping.alias(f"user{i}@{d}")),
            (MappingSource.of("team", d), Mapping.group(f"member{i}@{d}")),
            (MappingSource.of("team", d), Mapping.group(f"other{i}@{d}")),
            (MappingSource.of(f"user{i}", d), Mapping.forward(f"user{i}@elsewhere-{tag}.tld")),
            (MappingSource.of(f"old{i}", d), Mapping.address(f"new{i}@{d}")),
            (MappingSource.from_domain(f"old{i}-{tag}.tld"), Mapping.domain(d)),
            (MappingSource.from_domain(f"alias{i}-{tag}.tld"), Mapping.domain_alias(d)),
            (MappingSource.of(f"rx{i}", d), Mapping.regex(f"(.*)@{d}:${{1}}@x{i}.tld")),
            (MappingSource.of(f"closed{i}", d), Mapping.error("mailbox closed")),
        ]
        for source, mapping in pairs:
            table.add_mapping(source, mapping)
        seeded.pairs.extend(pairs)
    return seeded


def break_mappings(session: CassandraSession, seeded: SeededMappings, *, missing: int, orphan: int) -> None:
    """``missing`` new mappings whose projection insert fails; ``orphan`` removals whose projection delete fails."""
    table = CassandraRecipientRewriteTable(session)
    tag = uuid.uuid4().hex[:6]
    kinds = [Mapping.alias, Mapping.group, Mapping.forward, Mapping.address]
    for i in range(missing):
        pair = (MappingSource.of(f"late{i}", f"l-{tag}.tld"), kinds[i % len(kinds)](f"target{i}@t-{tag}.tld"))
        fail_once(session, "mappings_sources", "INSERT", lambda p=pair: table.add_mapping(*p))
        seeded.missing.append(pair)
    for i in range(orphan):
        pair = seeded.pairs.pop(i * 3 % len(seeded.pairs))   # spread over the mapping types
        fail_once(session, "mappings_sources", "DELETE", lambda p=pair: table.remove_mapping(*p))
        seeded.orphan.append(pair)


def projection_rows(session: CassandraSession) -> set[tuple[str, str, str]]:
    return {(r["mapping_type"], r["mapping_value"], r["source"])
            for r in session.execute("SELECT mapping_type, mapping_value, source FROM mappings_sources")}


def projection_matches_rrt(session: CassandraSession) -> None:
    """``mappings_sources`` holds exactly the row of every ``rrt`` row (read with CQL, decoded by the data layer)."""
    expected = set()
    for r in session.execute("SELECT user, domain, mapping FROM rrt"):
        mapping = Mapping.stored(r["mapping"])
        expected.add((mapping.type.prefix, mapping.value, f"{r['user']}@{r['domain']}"))
    assert projection_rows(session) == expected


def reverse_lookups_are_right(session: CassandraSession, seeded: SeededMappings) -> None:
    """The broken pairs as users see them: the sources of a mapping through the projection."""
    table = CassandraRecipientRewriteTable(session)
    for source, mapping in seeded.missing:
        assert source in table.list_sources(mapping), (source, mapping)
    for source, mapping in seeded.orphan:
        if mapping.type.james_name in ("Regex", "Error"):
            continue   # no reverse listing for these types (James's precondition)
        assert source not in table.list_sources(mapping), (source, mapping)
