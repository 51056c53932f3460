"""The RecipientRewriteTable contract on James's ``rrt`` and ``mappings_sources`` tables."""

from __future__ import annotations

import uuid

import pytest

from mailserver.domains.cassandra import CassandraDomainList
from mailserver.model.address import MailAddress
from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource
from mailserver.rrt.resolver import RecipientRewriter
from tests.contract.rrt_contract import RecipientRewriteTableContract

pytestmark = pytest.mark.integration


class TestCassandraRecipientRewriteTable(RecipientRewriteTableContract):
    @pytest.fixture
    def domain_list(self, cassandra):
        return CassandraDomainList(cassandra)

    @pytest.fixture
    def rrt(self, cassandra, domain_list):
        return CassandraRecipientRewriteTable(cassandra, domain_list)


def test_rows_are_spelled_as_james_writes_them(cassandra):
    rrt = CassandraRecipientRewriteTable(cassandra)
    domain = f"d{uuid.uuid4().hex[:12]}.test"
    rrt.add_mapping(MappingSource.of("team", domain), Mapping.group(f"bob@{domain}"))
    rrt.add_mapping(MappingSource.of("team", domain), Mapping.address(f"carol@{domain}"))
    rrt.add_mapping(MappingSource.from_domain(domain), Mapping.domain_alias("main.test"))

    assert cassandra.execute("SELECT user, domain, mapping FROM rrt WHERE user = 'team' AND domain = ?",
                             (domain,)) == [{"user": "team", "domain": domain, "mapping": f"carol@{domain}"},
                                            {"user": "team", "domain": domain, "mapping": f"group:bob@{domain}"}]
    assert cassandra.execute("SELECT source FROM mappings_sources WHERE mapping_type = 'group:' "
                             "AND mapping_value = ?", (f"bob@{domain}",)) == [{"source": f"team@{domain}"}]
    assert cassandra.execute("SELECT source FROM mappings_sources WHERE mapping_type = '' "
                             "AND mapping_value = ?", (f"carol@{domain}",)) == [{"source": f"team@{domain}"}]
    assert cassandra.execute("SELECT source FROM mappings_sources WHERE mapping_type = 'domainAlias:' "
                             "AND mapping_value = 'main.test'") != []
    assert cassandra.execute("SELECT mapping FROM rrt WHERE user = '*' AND domain = ?", (domain,)) == [
        {"mapping": "domainAlias:main.test"}]


def test_resolver_on_cassandra(cassandra):
    domains = CassandraDomainList(cassandra)
    rrt = CassandraRecipientRewriteTable(cassandra, domains)
    domain = domains.add(f"d{uuid.uuid4().hex[:12]}.test")
    rrt.add_group(f"team@{domain}", f"alice@{domain}")
    rrt.add_group(f"team@{domain}", "bob@remote.test")
    rrt.add_alias(f"al@{domain}", f"alice@{domain}")

    rewriter = RecipientRewriter(rrt, domains)
    assert sorted(map(str, rewriter.rewrite(MailAddress.of(f"team@{domain}")))) == [
        f"alice@{domain}", "bob@remote.test"]
    assert rewriter.rewrite(MailAddress.of(f"al@{domain}")) == [MailAddress.of(f"alice@{domain}")]
