"""Behaviour every ``DomainList`` adapter must have (memory and Cassandra).

Subclasses provide the ``domain_list`` fixture. The keyspace is shared, so every test works on
its own ``d<uuid>.test`` domains and never assumes an empty list.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.domains.api import DomainAlreadyExists, DomainList, DomainNotFound
from mailserver.model.address import Domain, InvalidAddress


def fresh_domain() -> Domain:
    return Domain.of(f"d{uuid.uuid4().hex[:12]}.test")


class DomainListContract:
    @pytest.fixture
    def domain_list(self) -> DomainList:
        raise NotImplementedError

    def test_added_domain_is_contained_and_listed(self, domain_list):
        domain = fresh_domain()
        assert domain_list.add(domain) == domain
        assert domain_list.contains(domain)
        assert domain in domain_list.list()

    def test_unknown_domain_is_not_contained(self, domain_list):
        domain = fresh_domain()
        assert not domain_list.contains(domain)
        assert domain not in domain_list.list()

    def test_domains_are_lower_cased_and_trailing_dot_dropped(self, domain_list):
        domain = fresh_domain()
        assert domain_list.add(domain.name.upper() + ".") == domain
        assert domain_list.contains(domain.name)
        assert domain_list.contains(domain.name.upper())
        assert domain.name.upper() not in {d.name for d in domain_list.list()}

    def test_adding_twice_fails_with_a_clear_message(self, domain_list):
        domain = fresh_domain()
        domain_list.add(domain)
        with pytest.raises(DomainAlreadyExists, match=f"domain {domain.name} already exists"):
            domain_list.add(domain.name.upper())

    @pytest.mark.parametrize("bad", ["", "   ", "bad domain.test", "user@d.test", "a/b.test", "-x.test", "a..b"])
    def test_invalid_domains_are_refused(self, domain_list, bad):
        with pytest.raises(InvalidAddress):
            domain_list.add(bad)

    def test_removed_domain_is_gone(self, domain_list):
        domain = fresh_domain()
        domain_list.add(domain)
        domain_list.remove(domain.name.upper())
        assert not domain_list.contains(domain)
        assert domain not in domain_list.list()

    def test_removing_an_unknown_domain_fails(self, domain_list):
        domain = fresh_domain()
        with pytest.raises(DomainNotFound, match=domain.name):
            domain_list.remove(domain)

    def test_a_removed_domain_can_be_added_again(self, domain_list):
        domain = fresh_domain()
        domain_list.add(domain)
        domain_list.remove(domain)
        domain_list.add(domain)
        assert domain_list.contains(domain)

    def test_list_is_sorted(self, domain_list):
        for _ in range(3):
            domain_list.add(fresh_domain())
        listed = domain_list.list()
        assert listed == sorted(listed)
