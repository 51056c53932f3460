"""The RRT mapping-sources DAG run by Airflow (``dag.test()``): health gate, Spark, report.

Seeded through the fault seam; checked with CQL by the test: the report's counters equal the
seeded faults, the projection equals what ``rrt`` stands for afterwards, and the verify pass
finds nothing left. The dry run is checked in test_dry_runs_write_nothing.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.maintenance.conftest import assert_refused, run_dag
from tests.support.rrt_maintenance import (
    break_mappings,
    projection_matches_rrt,
    reverse_lookups_are_right,
    seed_mappings,
)

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "solve_mappings_sources_inconsistencies"


def test_repair_then_nothing_left(maintenance_airflow, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mappings(session, per_type=4)
    break_mappings(session, seeded, missing=3, orphan=2)

    run, states, summary = run_dag(DAG_ID, {"slices": 2})
    assert run.state == "success", states
    assert states == {"check_params": "success", "backends_healthy": "success", "detect_repair_verify": "success",
                      "report": "success"}
    assert summary["detected"] == {"missingMappingSource": 3, "orphanMappingSource": 2}
    assert (summary["successfulMappingsCount"], summary["errorMappingsCount"]) == (5, 0)
    assert (summary["addedMappingsSources"], summary["removedMappingsSources"]) == (3, 2)
    assert summary["processedRrtEntries"] == len(seeded.pairs) + 3
    assert summary["outcome"] == "COMPLETED"
    projection_matches_rrt(session)
    reverse_lookups_are_right(session, seeded)

    # A second run's detection is the job's own verify pass (spark_apps/common/procedure.py detects
    # again, reading the tables afterwards): nothing left. A second spark-submit of the same code is
    # kept once, in test_solve_mailbox_inconsistencies_dag.py.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)


def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow):
    assert_refused(DAG_ID, {"rate": 0}, r"rate|exclusiveMinimum|less than or equal")
