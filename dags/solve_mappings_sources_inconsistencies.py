"""Airflow DAG: solve RRT mapping-sources inconsistencies (rrt is the truth, mappings_sources its projection)."""

from __future__ import annotations

from mailplatform.procedures import Procedure, repair_dag

DOC = """
### Solve RRT (recipient rewrite table) mapping-sources inconsistencies

**Why it happens.** Every alias, group member, forward, address, domain or regex mapping is
written twice: in `rrt` (the source of truth, read when mail is delivered) and in
`mappings_sources` (the reverse projection: "which addresses forward to bob?", "who is in this
group?"). Cassandra has no transaction across the two: a timeout between the writes leaves the
projection behind the truth.

**Symptoms.** Delivery follows the mappings, but the reverse listings of WebAdmin
(`GET /mappings/...` reverse lookups, the sources of an alias, a group or a forward) miss a
source that exists, or still list one that was removed.

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store to be healthy.
2. `detect_repair_verify` (Spark) derives, from every `rrt` row, the projection row it stands
   for and compares them with the rows of `mappings_sources`: a missing row is inserted, a row
   no mapping stands for any more is deleted. Each fix re-reads the `rrt` row at SERIAL
   consistency first and does nothing when the difference is gone. `rrt` is never written.
   Detection then runs again to verify.
3. `report` shows James's counters (`successfulMappingsCount`: projection rows fixed,
   `errorMappingsCount`: fixes that failed) with `addedMappingsSources` and
   `removedMappingsSources`; the full report is in S3
   (`maintenance-reports/reports/<dag>__<run>/...`).

**How to run it.** The guide has no detection tool for this and recommends running the repair
on a regular basis: start with `dry_run` to see what would change. Unlike James's task, which
empties `mappings_sources` and fills it again (reverse lookups are incomplete while it runs),
this one only touches the rows that differ, so it is safe with traffic on. A mapping added or
removed during the run can show up as `newSinceDetection`; a later run fixes it because the
truth is never touched. Use `rate` to bound the write load. A failed run is safe to run again;
a retried task resumes from its checkpoints.
"""

dag = repair_dag(Procedure(
    dag_id="solve_mappings_sources_inconsistencies",
    job="solve_mappings_sources_inconsistencies",
    task_type="cassandra-mappings-solve-inconsistencies",
    description="rrt vs mappings_sources: fix the reverse projection from the truth, without emptying it",
    doc_md=DOC,
    tags=("inconsistencies", "rrt"),
))
