"""The DomainList contract on James's ``domains`` table (session keyspace)."""

from __future__ import annotations

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from tests.contract.domains_contract import DomainListContract, fresh_domain

pytestmark = pytest.mark.integration


class TestCassandraDomainList(DomainListContract):
    @pytest.fixture
    def domain_list(self, cassandra):
        return CassandraDomainList(cassandra)


def test_the_row_is_the_lower_cased_name(cassandra):
    domain = fresh_domain()
    CassandraDomainList(cassandra).add(domain.name.upper())
    assert cassandra.execute("SELECT domain FROM domains WHERE domain = ?", (domain.name,)) == [
        {"domain": domain.name}]
