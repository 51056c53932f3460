"""The ``RecipientRewriteTable`` port: stored mappings, by source and in reverse (James's RRT).

Two levels of writes, as in James:

* ``add_mapping`` / ``remove_mapping`` store or delete one (source, mapping) pair. The mapping is
  validated; adding a pair twice is a no-op (the Cassandra write is an upsert), removing an
  absent pair is a no-op.
* The typed helpers (``add_alias``, ``add_forward``, ``add_group``, ``add_address_mapping``,
  ``add_domain_mapping``, ``add_domain_alias``, ``add_regex_mapping``, ``add_error_mapping``)
  add James's checks on top: ``MappingAlreadyExists`` for a duplicate,
  ``SourceDomainNotManaged`` when the source domain is not in the ``DomainList`` (only when the
  table was given one), ``SameSourceAndDestination`` for an address or alias mapping to itself.
  James's loop check at write time (409 "loop") is not done here: the resolver's depth limit
  stops loops at delivery (``RecursionLoopError``).

Reverse lookup (``list_sources``) is supported for Group, Forward, Address, Alias, Domain and
DomainAlias mappings only; other types raise ``ValueError`` (James's precondition).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable

from mailserver.domains.api import DomainList
from mailserver.model.address import Domain, MailAddress
from mailserver.rrt.mapping import Mapping, MappingSource, MappingType, as_source

REVERSE_LOOKUP_TYPES = frozenset({MappingType.GROUP, MappingType.FORWARD, MappingType.ADDRESS,
                                  MappingType.ALIAS, MappingType.DOMAIN, MappingType.DOMAIN_ALIAS})

SourceLike = MappingSource | MailAddress | str


class RecipientRewriteTableError(Exception):
    pass


class MappingAlreadyExists(RecipientRewriteTableError):
    def __init__(self, source: MappingSource, mapping: Mapping) -> None:
        super().__init__(f"mapping {mapping.as_string()} for {source.as_string()} already exists")


class SourceDomainNotManaged(RecipientRewriteTableError):
    def __init__(self, source: MappingSource) -> None:
        super().__init__(f"source domain {source.domain} of {source.as_string()} is not a local domain "
                         f"(add it to the domain list first)")


class SameSourceAndDestination(RecipientRewriteTableError):
    def __init__(self, source: MappingSource) -> None:
        super().__init__(f"source and destination can't be the same: {source.as_string()}")


class RecipientRewriteTable(ABC):
    def __init__(self, domains: DomainList | None = None) -> None:
        self.domains = domains

    # -- raw pairs ------------------------------------------------------------------------------
    def add_mapping(self, source: SourceLike, mapping: Mapping) -> None:
        self._store(as_source(source), mapping.validated())

    def remove_mapping(self, source: SourceLike, mapping: Mapping) -> None:
        # Not validated: removing a legacy value we would refuse today must stay possible.
        self._delete(as_source(source), mapping)

    def get_stored_mappings(self, source: SourceLike) -> list[Mapping]:
        """The mappings stored for exactly this source (no wildcard fallback, no recursion)."""
        return sorted(self._stored(as_source(source)), key=Mapping.as_string)

    def list_sources(self, mapping: Mapping) -> list[MappingSource]:
        """Sources pointing to ``mapping`` (reverse lookup through the projection)."""
        if mapping.type not in REVERSE_LOOKUP_TYPES:
            raise ValueError(f"listing sources is not supported for {mapping.type.james_name} mappings; "
                             f"supported: {', '.join(sorted(t.james_name for t in REVERSE_LOOKUP_TYPES))}")
        return sorted(set(self._sources(mapping)))

    def get_all_mappings(self) -> dict[MappingSource, list[Mapping]]:
        result: dict[MappingSource, list[Mapping]] = {}
        for source, mapping in self._all():
            result.setdefault(source, []).append(mapping)
        return {source: sorted(mappings, key=Mapping.as_string) for source, mappings in sorted(result.items())}

    # -- typed helpers with James's checks -------------------------------------------------------
    def add_address_mapping(self, source: SourceLike, address: MailAddress | str) -> None:
        self._add_checked(as_source(source), Mapping.address(address), same_check=True)

    def add_alias(self, source: SourceLike, user: MailAddress | str) -> None:
        """Mail to ``source`` (the alias) goes to ``user``."""
        self._add_checked(as_source(source), Mapping.alias(user), same_check=True)

    def add_forward(self, source: SourceLike, destination: MailAddress | str) -> None:
        """Mail to ``source`` goes to ``destination``; forwarding to itself keeps a local copy."""
        self._add_checked(as_source(source), Mapping.forward(destination))

    def add_group(self, source: SourceLike, member: MailAddress | str) -> None:
        self._add_checked(as_source(source), Mapping.group(member))

    def add_domain_mapping(self, source_domain: Domain | str, target_domain: Domain | str) -> None:
        self._add_checked(MappingSource.from_domain(source_domain), Mapping.domain(target_domain))

    def add_domain_alias(self, alias_domain: Domain | str, real_domain: Domain | str) -> None:
        self._add_checked(MappingSource.from_domain(alias_domain), Mapping.domain_alias(real_domain))

    def add_regex_mapping(self, source: SourceLike, regex: str) -> None:
        self._add_checked(as_source(source), Mapping.regex(regex))

    def add_error_mapping(self, source: SourceLike, message: str) -> None:
        self._add_checked(as_source(source), Mapping.error(message))

    def _add_checked(self, source: MappingSource, mapping: Mapping, *, same_check: bool = False) -> None:
        if same_check and source.as_string() == mapping.value.lower():
            raise SameSourceAndDestination(source)
        domain = source.domain_part()
        if self.domains is not None and domain is not None and not self.domains.contains(domain):
            raise SourceDomainNotManaged(source)
        if mapping in self._stored(source):
            raise MappingAlreadyExists(source, mapping)
        self._store(source, mapping)

    # -- storage primitives -----------------------------------------------------------------------
    @abstractmethod
    def _store(self, source: MappingSource, mapping: Mapping) -> None:
        """Write the pair: the table first, then the reverse projection."""

    @abstractmethod
    def _delete(self, source: MappingSource, mapping: Mapping) -> None:
        """Delete the pair, in the same order as ``_store``."""

    @abstractmethod
    def _stored(self, source: MappingSource) -> Iterable[Mapping]: ...

    @abstractmethod
    def _sources(self, mapping: Mapping) -> Iterable[MappingSource]:
        """Sources recorded in the reverse projection for ``mapping``."""

    @abstractmethod
    def _all(self) -> Iterable[tuple[MappingSource, Mapping]]: ...
