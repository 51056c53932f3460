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
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from spark_apps.common.job_run import COMPLETED, RunOptions, job_parser, run_job
from spark_apps.common.procedure import Procedure
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
    parser = job_parser(JOB, __doc__.splitlines()[0])
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


def scan(spark: Any, settings: JobSettings, options: RunOptions, names: Sequence[str]) -> dict[str, Any]:
    """The report: each procedure's detection."""
    results: dict[str, Any] = {}
    for name in names:
        procedure = load_procedure(name)
        running_options = default_configured(procedure)
        results[name] = {**detect_one(spark, settings, procedure, options.sample_size),
                         "runningOptions": running_options}
        log.info("%s: %s", name, results[name]["detected"] or "consistent")
    return {"type": JOB, "timestamp": datetime.now(UTC).isoformat(), "runKey": options.run_key,
            "procedures": results, "withWork": sorted(n for n, r in results.items() if r["total"]),
            "outcome": COMPLETED}


def detected_per_procedure(report: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return {n: r["detected"] for n, r in report["procedures"].items()}, {}


def main(argv: Sequence[str] | None = None) -> int:
    _, settings, options, names = parse(argv if argv is not None else sys.argv[1:])
    # No summary block: finding work is this job's result, not a repair's "detected, fixed, failed".
    return run_job(JOB, settings, options, {"procedures": names},
                   lambda spark, _endpoint: scan(spark, settings, options, names),
                   counts=detected_per_procedure, summary=None)


if __name__ == "__main__":
    sys.exit(main())
