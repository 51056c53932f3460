"""The rrt vs mappings_sources inconsistency of the operator guide, made through the fault seam.

``rrt`` is written first and ``mappings_sources`` second (James's order): a failure of the second
write leaves the truth right and the reverse projection behind. Seen here with plain CQL and
through the port (``get_stored_mappings`` reads the truth, ``list_sources`` the projection).
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.cassandra.faults import InjectedWriteFailure
from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource

pytestmark = pytest.mark.integration


@pytest.fixture
def rrt(cassandra):
    return CassandraRecipientRewriteTable(cassandra)


@pytest.fixture
def domain() -> str:
    return f"i{uuid.uuid4().hex[:12]}.test"


def rrt_rows(cassandra, user: str, domain: str) -> list[dict]:
    return cassandra.execute("SELECT mapping FROM rrt WHERE user = ? AND domain = ?", (user, domain))


def projection_rows(cassandra, mapping: Mapping) -> list[dict]:
    return cassandra.execute("SELECT source FROM mappings_sources WHERE mapping_type = ? AND mapping_value = ?",
                             (mapping.type.prefix, mapping.value))


def test_projection_misses_a_mapping_whose_second_write_failed(cassandra, faults, rrt, domain):
    source = MappingSource.of("alias", domain)
    mapping = Mapping.forward(f"bob@{domain}")
    faults.fail("mappings_sources", kind="INSERT")

    with pytest.raises(InjectedWriteFailure, match="mappings_sources"):
        rrt.add_mapping(source, mapping)

    assert rrt_rows(cassandra, "alias", domain) == [{"mapping": f"forward:bob@{domain}"}]
    assert projection_rows(cassandra, mapping) == []
    # Through the port: the truth has it, the reverse lookup does not.
    assert rrt.get_stored_mappings(source) == [mapping]
    assert rrt.list_sources(mapping) == []


def test_projection_keeps_a_mapping_whose_removal_failed_half_way(cassandra, faults, rrt, domain):
    source = MappingSource.of("alias", domain)
    mapping = Mapping.group(f"bob@{domain}")
    rrt.add_mapping(source, mapping)
    faults.fail("mappings_sources", kind="DELETE")

    with pytest.raises(InjectedWriteFailure):
        rrt.remove_mapping(source, mapping)

    assert rrt_rows(cassandra, "alias", domain) == []
    assert projection_rows(cassandra, mapping) == [{"source": f"alias@{domain}"}]
    assert rrt.get_stored_mappings(source) == []
    assert rrt.list_sources(mapping) == [source]   # a stale reverse entry


def test_retrying_the_write_repairs_the_pair(cassandra, faults, rrt, domain):
    # Both writes are idempotent upserts: replaying the failed operation converges.
    source = MappingSource.of("alias", domain)
    mapping = Mapping.alias(f"bob@{domain}")
    faults.fail("mappings_sources", kind="INSERT")
    with pytest.raises(InjectedWriteFailure):
        rrt.add_mapping(source, mapping)

    rrt.add_mapping(source, mapping)

    assert projection_rows(cassandra, mapping) == [{"source": f"alias@{domain}"}]
    assert rrt.list_sources(mapping) == [source]
