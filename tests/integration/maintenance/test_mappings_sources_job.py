"""The RRT mapping-sources Spark job through spark-submit, on projections broken by the fault seam.

Checked with CQL by the test, never by the job: counters equal to what was seeded, the
projection equal to what ``rrt`` stands for afterwards (and the reverse lookups right), a dry
run that writes nothing, a second run that finds nothing; and the repair's re-read of ``rrt``
leaving alone what changed since the detection.
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
from tests.support.maintenance import fail_once, report_of, spark_submit, table_checksum
from tests.support.rrt_maintenance import (
    break_mappings,
    projection_matches_rrt,
    projection_rows,
    reverse_lookups_are_right,
    seed_mappings,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "solve_mappings_sources_inconsistencies"


def job_args(session, stack, *extra: str) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, *extra]


def test_dry_run_reports_and_writes_nothing_then_repair_fixes_exactly_what_was_broken(
        stack, spark_env, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mappings(session, per_type=6)
    break_mappings(session, seeded, missing=5, orphan=4)
    rrt_rows = len(session.execute("SELECT mapping FROM rrt"))
    projected = len(projection_rows(session))
    assert (rrt_rows, projected) == (len(seeded.pairs) + 5, len(seeded.pairs) + 4)

    before = table_checksum(session, "rrt", "mappings_sources")
    dry = spark_submit(JOB, job_args(session, stack, "--dry-run"), spark_env)
    assert dry.returncode == 0, dry.stderr[-4000:]
    report = report_of(dry.stdout)
    assert report["detected"] == {MISSING: 5, ORPHAN: 4} and report["outcome"] == "DRY_RUN"
    assert report["successfulMappingsCount"] == 0
    assert table_checksum(session, "rrt", "mappings_sources") == before

    fixed = spark_submit(JOB, job_args(session, stack, "--slices", "4"), spark_env)
    assert fixed.returncode == 0, fixed.stderr[-4000:]
    report = report_of(fixed.stdout)
    assert report["type"] == "cassandra-mappings-solve-inconsistencies"
    assert (report["successfulMappingsCount"], report["errorMappingsCount"]) == (9, 0)
    assert (report["addedMappingsSources"], report["removedMappingsSources"]) == (5, 4)
    assert (report["processedRrtEntries"], report["processedMappingsSourcesEntries"]) == (rrt_rows, projected)
    assert report["outcome"] == "COMPLETED" and report["remaining"] == {} and report["errors"] == []
    projection_matches_rrt(session)
    reverse_lookups_are_right(session, seeded)

    again = spark_submit(JOB, job_args(session, stack), spark_env)
    assert again.returncode == 0, again.stderr[-4000:]
    assert report_of(again.stdout)["detected"] == {}


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
