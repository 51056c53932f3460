"""Scan for every kind of Cassandra inconsistency at once, without writing anything.

The guide asks operators to "run the task regularly"; this job is that regular run. It opens
one Spark session and runs the *detection* of each repair procedure (the same code the repair
jobs verify with, so scan and repair never disagree), counts what each finds, and writes one
report: per procedure the counts by kind, James's ``processed...`` counters and a sample of
items. The scan DAG reads ``withWork`` to trigger the matching repair DAGs.

Detection only reads through the connector: it is safe online, at any time. Exit status 0
whatever it finds (finding work is not a failure), 2 on bad arguments, non-zero on a crash.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from spark_apps.common.bookkeeping import AuditLog, AuditRecord, ensure_tables
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import Procedure, RunOptions
from spark_apps.common.reports import ReportLocation, write_report
from spark_apps.common.session import build_session
from spark_apps.common.settings import JobSettings

JOB = "detect-cassandra-inconsistencies"

# Procedure name -> (job module, Procedure class). The names are the scan's vocabulary: the scan
# DAG maps each to the DAG that repairs it.
PROCEDURES: dict[str, tuple[str, str]] = {
    "messages": ("spark_apps.jobs.solve_message_inconsistencies", "SolveMessageInconsistencies"),
    "mailboxes": ("spark_apps.jobs.solve_mailbox_inconsistencies", "SolveMailboxInconsistencies"),
    "mappings_sources": ("spark_apps.jobs.solve_mappings_sources_inconsistencies",
                         "SolveMappingsSourcesInconsistencies"),
    "mailbox_counters": ("spark_apps.jobs.recompute_mailbox_counters", "RecomputeMailboxCounters"),
    "current_quotas": ("spark_apps.jobs.recompute_current_quotas", "RecomputeCurrentQuotas"),
    "fast_view": ("spark_apps.jobs.recompute_fast_view_projection", "RecomputeFastViewProjection"),
}

log = logging.getLogger("mailplatform.detect")


def load_procedure(name: str) -> Procedure:
    module, cls = PROCEDURES[name]
    return getattr(importlib.import_module(module), cls)()


def default_configured(procedure: Procedure) -> dict[str, Any]:
    """Configure a procedure with its defaults (whole keyspace), as its own CLI would with no options."""
    parser = argparse.ArgumentParser(add_help=False)
    procedure.add_arguments(parser)
    args, _ = parser.parse_known_args([])
    args.rate, args.dry_run = None, True   # run options some procedures read while configuring
    return procedure.configure(args)


def detect_one(spark: Any, settings: JobSettings, procedure: Procedure, sample_size: int) -> dict[str, Any]:
    started = time.monotonic()
    detection = procedure.detect(spark, settings)
    items = detection.items.cache()
    detected = {r["kind"]: r["count"] for r in items.groupBy("kind").count().collect()}
    sample = [r.asDict(recursive=True) for r in items.limit(sample_size).collect()] if detected else []
    items.unpersist()
    return {"type": procedure.job, "detected": detected, "processed": detection.processed,
            "total": sum(detected.values()), "sample": sample,
            "durationSeconds": round(time.monotonic() - started, 3)}


def parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, JobSettings, RunOptions, list[str]]:
    parser = argparse.ArgumentParser(prog=JOB, description=__doc__.splitlines()[0])
    JobSettings.add_arguments(parser)
    RunOptions.add_arguments(parser)
    parser.add_argument("--procedure", action="append", default=[], choices=sorted(PROCEDURES),
                        help="scan only these (repeatable; default: all)")
    args = parser.parse_args(argv)
    args.dry_run = True   # a scan never writes, whatever it was asked
    try:
        options = RunOptions.from_args(args)
    except ValueError as exc:
        parser.error(str(exc))
    names = list(dict.fromkeys(args.procedure)) or sorted(PROCEDURES)
    return args, JobSettings.from_args(args), options, names


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    _, settings, options, names = parse(argv if argv is not None else sys.argv[1:])
    endpoint = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace)
    cql = endpoint.session()
    ensure_tables(cql)
    audit = AuditLog(cql)
    location = ReportLocation.for_run(JOB, options.run_key, options.report_bucket)
    record = AuditRecord(JOB, options.run_key, datetime.now(UTC), options.triggered_by, options.dag_id,
                         options.dag_run_id, {"procedures": names}, report_uri=location.uri)
    audit.write(record)
    spark = build_session(JOB, settings)
    results: dict[str, Any] = {}
    try:
        for name in names:
            procedure = load_procedure(name)
            running_options = default_configured(procedure)
            results[name] = {**detect_one(spark, settings, procedure, options.sample_size),
                             "runningOptions": running_options}
            log.info("%s: %s", name, results[name]["detected"] or "consistent")
    except Exception:
        record.outcome = "FAILED"
        audit.write(record)
        raise
    finally:
        spark.stop()
    report = {"type": JOB, "timestamp": datetime.now(UTC).isoformat(), "runKey": options.run_key,
              "procedures": results, "withWork": sorted(n for n, r in results.items() if r["total"]),
              "outcome": "COMPLETED"}
    record.counts_before = {n: r["detected"] for n, r in results.items()}
    record.outcome = "COMPLETED"
    write_report(report, location)
    audit.write(record)
    print("REPORT " + json.dumps(report, default=str, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
