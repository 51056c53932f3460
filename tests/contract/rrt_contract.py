"""Behaviour every ``RecipientRewriteTable`` adapter must have (memory and Cassandra).

Subclasses provide ``domain_list`` and ``rrt`` (built on it, so the typed helpers check that
source domains are local). Every test works under its own ``d<uuid>.test`` domain, so a shared
keyspace is fine and ``get_all_mappings`` is only ever checked for this test's sources.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.domains.api import DomainList
from mailserver.model.address import Domain
from mailserver.rrt.api import (
    MappingAlreadyExists,
    RecipientRewriteTable,
    SameSourceAndDestination,
    SourceDomainNotManaged,
)
from mailserver.rrt.mapping import InvalidMapping, Mapping, MappingSource, MappingType


class RecipientRewriteTableContract:
    @pytest.fixture
    def domain_list(self) -> DomainList:
        raise NotImplementedError

    @pytest.fixture
    def rrt(self, domain_list) -> RecipientRewriteTable:
        raise NotImplementedError

    @pytest.fixture
    def domain(self, domain_list) -> Domain:
        return domain_list.add(f"d{uuid.uuid4().hex[:12]}.test")

    @pytest.fixture
    def source(self, domain) -> MappingSource:
        return MappingSource.of("alias", domain)

    # -- raw pairs ------------------------------------------------------------------------------
    def test_stored_mappings_of_a_source(self, rrt, source, domain):
        rrt.add_mapping(source, Mapping.address(f"bob@{domain}"))
        rrt.add_mapping(source, Mapping.forward("someone@elsewhere.test"))
        assert rrt.get_stored_mappings(source) == [Mapping.address(f"bob@{domain}"),
                                                   Mapping.forward("someone@elsewhere.test")]
        assert rrt.get_stored_mappings(f"ALIAS@{domain}") == rrt.get_stored_mappings(source)

    def test_unknown_source_has_no_mapping(self, rrt, domain):
        assert rrt.get_stored_mappings(MappingSource.of("nobody", domain)) == []

    def test_adding_the_same_pair_twice_stores_it_once(self, rrt, source, domain):
        rrt.add_mapping(source, Mapping.group(f"a@{domain}"))
        rrt.add_mapping(source, Mapping.group(f"a@{domain.name.upper()}"))
        assert rrt.get_stored_mappings(source) == [Mapping.group(f"a@{domain}")]

    def test_removed_mapping_is_gone_from_both_views(self, rrt, source, domain):
        kept, removed = Mapping.group(f"a@{domain}"), Mapping.group(f"b@{domain}")
        rrt.add_mapping(source, kept)
        rrt.add_mapping(source, removed)
        rrt.remove_mapping(source, removed)
        assert rrt.get_stored_mappings(source) == [kept]
        assert rrt.list_sources(removed) == []
        assert rrt.list_sources(kept) == [source]

    def test_removing_an_absent_mapping_is_a_no_op(self, rrt, source, domain):
        rrt.remove_mapping(source, Mapping.alias(f"ghost@{domain}"))
        assert rrt.get_stored_mappings(source) == []

    def test_mappings_are_validated_on_write(self, rrt, source):
        with pytest.raises(InvalidMapping, match="invalid regex"):
            rrt.add_mapping(source, Mapping(MappingType.REGEX, "(unclosed@x:${1}@y.test"))
        with pytest.raises(InvalidMapping, match="needs a mail address"):
            rrt.add_mapping(source, Mapping(MappingType.FORWARD, "not an address"))
        with pytest.raises(InvalidMapping, match="needs a domain"):
            rrt.add_mapping(source, Mapping(MappingType.DOMAIN, "bad domain"))
        assert rrt.get_stored_mappings(source) == []

    def test_every_type_round_trips(self, rrt, source, domain):
        mappings = [Mapping.address(f"a@{domain}"), Mapping.alias(f"b@{domain}"), Mapping.forward("c@x.test"),
                    Mapping.group(f"d@{domain}"), Mapping.domain("x.test"), Mapping.domain_alias("y.test"),
                    Mapping.regex(r"(.*)@old\.test:${1}@new.test"), Mapping.error("550 gone")]
        for mapping in mappings:
            rrt.add_mapping(source, mapping)
        assert sorted(rrt.get_stored_mappings(source), key=Mapping.as_string) == sorted(mappings,
                                                                                       key=Mapping.as_string)
        assert {m.type for m in rrt.get_stored_mappings(source)} == set(MappingType)

    # -- reverse lookup -------------------------------------------------------------------------
    @pytest.mark.parametrize("make", [Mapping.group, Mapping.forward, Mapping.address, Mapping.alias])
    def test_list_sources_of_address_mappings(self, rrt, domain, make):
        target = make(f"target@{domain}")
        sources = [MappingSource.of(f"s{i}", domain) for i in range(2)]
        for s in sources:
            rrt.add_mapping(s, target)
        assert rrt.list_sources(target) == sorted(sources)

    def test_list_sources_of_domain_mappings(self, rrt, domain):
        target = Mapping.domain(f"target.{domain}")
        alias = Mapping.domain_alias(f"real.{domain}")
        rrt.add_mapping(MappingSource.from_domain(domain), target)
        rrt.add_mapping(MappingSource.from_domain(f"alias.{domain}"), alias)
        assert rrt.list_sources(target) == [MappingSource.from_domain(domain)]
        assert rrt.list_sources(alias) == [MappingSource.from_domain(f"alias.{domain}")]

    def test_list_sources_does_not_mix_types(self, rrt, source, domain):
        rrt.add_mapping(source, Mapping.group(f"t@{domain}"))
        assert rrt.list_sources(Mapping.forward(f"t@{domain}")) == []

    @pytest.mark.parametrize("mapping", [Mapping.regex("(.*)@a.test:${1}@b.test"), Mapping.error("550 no")])
    def test_list_sources_refuses_regex_and_error(self, rrt, mapping):
        with pytest.raises(ValueError, match="not supported"):
            rrt.list_sources(mapping)

    # -- whole table ----------------------------------------------------------------------------
    def test_get_all_mappings(self, rrt, domain):
        group = MappingSource.of("team", domain)
        whole = MappingSource.from_domain(domain)
        rrt.add_mapping(group, Mapping.group(f"b@{domain}"))
        rrt.add_mapping(group, Mapping.group(f"a@{domain}"))
        rrt.add_mapping(whole, Mapping.domain("x.test"))
        mine = {s: m for s, m in rrt.get_all_mappings().items() if s.domain == domain.name}
        assert mine == {group: [Mapping.group(f"a@{domain}"), Mapping.group(f"b@{domain}")],
                        whole: [Mapping.domain("x.test")]}

    # -- typed helpers --------------------------------------------------------------------------
    def test_typed_helpers_store_their_type(self, rrt, domain_list, domain):
        domain_list.add(f"alias.{domain}")   # a domain alias source must be a local domain too (James)
        s = [MappingSource.of(f"s{i}", domain) for i in range(5)]
        rrt.add_alias(s[0], f"bob@{domain}")
        rrt.add_forward(s[1], "bob@remote.test")
        rrt.add_group(s[2], f"bob@{domain}")
        rrt.add_address_mapping(s[3], f"bob@{domain}")
        rrt.add_regex_mapping(s[4], "(.*)@(.*):${1}@x.test")
        rrt.add_domain_mapping(domain, "new.test")
        rrt.add_domain_alias(f"alias.{domain}", domain)
        assert rrt.get_stored_mappings(s[0]) == [Mapping.alias(f"bob@{domain}")]
        assert rrt.get_stored_mappings(s[1]) == [Mapping.forward("bob@remote.test")]
        assert rrt.get_stored_mappings(s[2]) == [Mapping.group(f"bob@{domain}")]
        assert rrt.get_stored_mappings(s[3]) == [Mapping.address(f"bob@{domain}")]
        assert rrt.get_stored_mappings(s[4]) == [Mapping.regex("(.*)@(.*):${1}@x.test")]
        assert rrt.get_stored_mappings(MappingSource.from_domain(domain)) == [Mapping.domain("new.test")]
        assert rrt.get_stored_mappings(f"*@alias.{domain}") == [Mapping.domain_alias(domain)]

    def test_typed_helper_refuses_a_duplicate(self, rrt, source, domain):
        rrt.add_group(source, f"m@{domain}")
        with pytest.raises(MappingAlreadyExists, match="already exists"):
            rrt.add_group(source, f"m@{domain.name.upper()}")

    def test_typed_helper_refuses_a_source_domain_that_is_not_local(self, rrt, domain):
        stranger = MappingSource.of("x", f"n{uuid.uuid4().hex[:8]}.test")
        with pytest.raises(SourceDomainNotManaged, match="is not a local domain"):
            rrt.add_forward(stranger, f"bob@{domain}")
        with pytest.raises(SourceDomainNotManaged):
            rrt.add_domain_mapping(stranger.domain, domain)
        assert rrt.get_stored_mappings(stranger) == []

    def test_alias_and_address_to_themselves_are_refused(self, rrt, source):
        with pytest.raises(SameSourceAndDestination):
            rrt.add_alias(source, source.as_string())
        with pytest.raises(SameSourceAndDestination):
            rrt.add_address_mapping(source, source.as_string().upper())

    def test_forward_to_itself_is_allowed(self, rrt, source):
        # James: a user lists itself among its forwards to keep a local copy.
        rrt.add_forward(source, source.as_string())
        assert rrt.get_stored_mappings(source) == [Mapping.forward(source.as_string())]

    def test_raw_add_mapping_does_not_need_a_local_domain(self, rrt):
        stranger = MappingSource.of("x", f"n{uuid.uuid4().hex[:8]}.test")
        rrt.add_mapping(stranger, Mapping.forward("y@z.test"))
        assert rrt.get_stored_mappings(stranger) == [Mapping.forward("y@z.test")]
