"""The RRT mapping-sources repair of one item: its re-read of ``rrt`` leaves alone what changed
since the detection. The whole job (counters, dry run, verify pass) is shown through Airflow in
``tests/e2e/maintenance/test_solve_mappings_sources_inconsistencies_dag.py``.
"""

from __future__ import annotations

import pytest

from mailserver.rrt.cassandra import CassandraRecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED
from spark_apps.jobs.solve_mappings_sources_inconsistencies import (
    MISSING,
    ORPHAN,
    SolveMappingsSourcesInconsistencies,
)
from tests.support.maintenance import fail_once
from tests.support.rrt_maintenance import (
    projection_matches_rrt,
    projection_rows,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "solve_mappings_sources_inconsistencies"


def test_the_repair_re_reads_rrt_and_leaves_alone_what_changed_since_detection(stack, maintenance_keyspace):
    session = maintenance_keyspace
    table = CassandraRecipientRewriteTable(session)
    procedure = SolveMappingsSourcesInconsistencies()
    endpoint = CqlEndpoint(stack.cassandra_hosts, stack.cassandra_port, session.keyspace)
    source, mapping = MappingSource.of("bob", "d.tld"), Mapping.forward("bob@else.tld")
    item = {"mapping_type": "forward:", "mapping_value": "bob@else.tld", "source": "bob@d.tld"}

    # detected missing, then the mapping was removed by its owner: nothing is inserted
    fail_once(session, "mappings_sources", "INSERT", lambda: table.add_mapping(source, mapping))
    table.remove_mapping(source, mapping)
    assert procedure.repair(endpoint, {"kind": MISSING, **item}).status == SKIPPED
    assert projection_rows(session) == set()

    # detected orphan, then the mapping was added again (projection write failed again): kept
    fail_once(session, "mappings_sources", "INSERT", lambda: table.add_mapping(source, mapping))
    session.execute("INSERT INTO mappings_sources (mapping_type, mapping_value, source) VALUES (?, ?, ?)",
                    ("forward:", "bob@else.tld", "bob@d.tld"))
    assert procedure.repair(endpoint, {"kind": ORPHAN, **item}).status == SKIPPED
    assert table.list_sources(mapping) == [source]

    # a real orphan is deleted, a real missing row is inserted
    table.remove_mapping(source, mapping)
    session.execute("INSERT INTO mappings_sources (mapping_type, mapping_value, source) VALUES (?, ?, ?)",
                    ("forward:", "bob@else.tld", "bob@d.tld"))
    assert procedure.repair(endpoint, {"kind": ORPHAN, **item}).status == FIXED
    assert table.list_sources(mapping) == []
    fail_once(session, "mappings_sources", "INSERT", lambda: table.add_mapping(source, mapping))
    assert procedure.repair(endpoint, {"kind": MISSING, **item}).status == FIXED
    assert table.list_sources(mapping) == [source]
    projection_matches_rrt(session)
