"""Solve mappings-sources inconsistencies: ``rrt`` is the truth, ``mappings_sources`` its projection.

James's ``cassandra-mappings-solve-inconsistencies`` truncates ``mappings_sources`` and writes it
again from every ``rrt`` row, so reverse lookups (``list_sources``: who forwards to, who is in the
group ...) are empty or incomplete while it runs. Here the projection is never emptied: Spark
derives the expected projection row of every ``rrt`` row (``mapping_type`` = the mapping's prefix
with its colon, ``mapping_value`` = the rest, ``source`` = ``user@domain``) and compares it with
the rows that exist:

* ``missingMappingSource``: an expected row that is absent -> inserted
  (``addedMappingsSources``);
* ``orphanMappingSource``: a projection row no ``rrt`` row stands for -> deleted
  (``removedMappingsSources``).

Each fix re-reads the ``rrt`` row at SERIAL consistency (and the projection row) first and does
nothing when the difference is gone. ``rrt`` is never written, so the procedure runs online and
a re-run converges. Report: James's ``successfulMappingsCount`` (projection rows fixed) and
``errorMappingsCount`` (fixes that failed), plus the framework's fields.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

MISSING = "missingMappingSource"
ORPHAN = "orphanMappingSource"
ADDED = "addedMappingsSources"
REMOVED = "removedMappingsSources"
# James's Mapping.Type prefixes, in the order a stored mapping is matched against them
# (mailserver.rrt.mapping.MappingType.detect); no known prefix means an Address mapping ("").
PREFIXES = ("regex:", "domain:", "domainAlias:", "error:", "forward:", "group:", "alias:")
KEY_COLUMNS = ("mapping_type", "mapping_value", "source")


def split_mapping(mapping: str) -> tuple[str, str]:
    """(mapping_type, mapping_value) of a stored ``rrt.mapping`` string."""
    prefix = next((p for p in PREFIXES if mapping.startswith(p)), "")
    return prefix, mapping[len(prefix):]


def _mapping_type(mapping: Column) -> Column:
    """Spark twin of ``split_mapping``'s prefix: the first matching prefix, else ""."""
    from pyspark.sql import functions as F

    result = F.lit("")
    for prefix in reversed(PREFIXES):   # built inside out, so the first prefix is tested first
        result = F.when(mapping.startswith(prefix), F.lit(prefix)).otherwise(result)
    return result


def expected_projection(rrt: DataFrame) -> DataFrame:
    """Pure: the ``mappings_sources`` row every ``rrt`` row (user, domain, mapping) stands for."""
    from pyspark.sql import functions as F

    typed = rrt.withColumn("mapping_type", _mapping_type(F.col("mapping")))
    return typed.select(
        "mapping_type",
        F.expr("substring(mapping, char_length(mapping_type) + 1)").alias("mapping_value"),
        F.concat_ws("@", "user", "domain").alias("source"),
    ).distinct()


def mappings_sources_inconsistencies(rrt: DataFrame, mappings_sources: DataFrame) -> DataFrame:
    """Pure: the projection rows to add or remove (kind, mapping_type, mapping_value, source)."""
    from pyspark.sql import functions as F

    expected = expected_projection(rrt)
    actual = mappings_sources.select(*KEY_COLUMNS)
    missing = expected.join(actual, list(KEY_COLUMNS), "left_anti").select(F.lit(MISSING).alias("kind"), *KEY_COLUMNS)
    orphan = actual.join(expected, list(KEY_COLUMNS), "left_anti").select(F.lit(ORPHAN).alias("kind"), *KEY_COLUMNS)
    return missing.unionByName(orphan)


class SolveMappingsSourcesInconsistencies(Procedure):
    job = "cassandra-mappings-solve-inconsistencies"
    slice_columns = ("mapping_type", "mapping_value")

    def configure(self, args: Any) -> dict[str, Any]:
        return {"mappingsPerSecond": args.rate}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        rrt = read_table(spark, settings, "rrt", ["user", "domain", "mapping"]).cache()
        projection = read_table(spark, settings, "mappings_sources", list(KEY_COLUMNS)).cache()
        processed = {"processedRrtEntries": rrt.count(), "processedMappingsSourcesEntries": projection.count()}
        return Detection(mappings_sources_inconsistencies(rrt, projection), processed)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        counters = {ADDED: 0, REMOVED: 0, **result.counters}
        return {**detection.processed, **counters,
                "successfulMappingsCount": counters[ADDED] + counters[REMOVED],
                "errorMappingsCount": len(result.failures)}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        mapping_type, mapping_value, source = item["mapping_type"], item["mapping_value"], item["source"]
        user, _, domain = source.rpartition("@")   # a domain has no "@": the last one splits
        mapping = mapping_type + mapping_value
        truth = cql.serial_read("SELECT mapping FROM rrt WHERE user = ? AND domain = ? AND mapping = ?",
                                (user, domain, mapping))
        # The rrt row must stand for exactly this projection row ("foo:bar" is an Address mapping).
        stands_for_it = bool(truth) and split_mapping(mapping) == (mapping_type, mapping_value)
        present = cql.serial_read("SELECT source FROM mappings_sources WHERE mapping_type = ? AND mapping_value = ? "
                                  "AND source = ?", (mapping_type, mapping_value, source))
        if item["kind"] == MISSING:
            if not stands_for_it or present:
                return Outcome(SKIPPED, item)
            cql.execute("INSERT INTO mappings_sources (mapping_type, mapping_value, source) VALUES (?, ?, ?)",
                        (mapping_type, mapping_value, source))
            return Outcome(FIXED, item, ADDED)
        if stands_for_it or not present:
            return Outcome(SKIPPED, item)
        cql.execute("DELETE FROM mappings_sources WHERE mapping_type = ? AND mapping_value = ? AND source = ?",
                    (mapping_type, mapping_value, source))
        return Outcome(FIXED, item, REMOVED)


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(SolveMappingsSourcesInconsistencies(), argv)


if __name__ == "__main__":
    sys.exit(main())
