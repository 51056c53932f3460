"""The envelope of every maintenance job's run, whatever its work, so a new job is its work only:

    arguments (connections, run options, the job's own) -> logging -> audit row RUNNING -> Spark session
        -> the job's work, which returns its report -> the report to S3 and stdout
        -> audit row with the outcome -> exit status

The exit status: 0 COMPLETED (or a dry run), 1 anything else (PARTIAL: failed or unresolved items),
2 bad arguments (argparse's own). A job that raises leaves its audit row FAILED and no report: the
Airflow ``report`` task then says the job failed before the end.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from spark_apps.common.bookkeeping import AuditLog, AuditRecord, ensure_tables
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.progress import summary_block
from spark_apps.common.reports import ReportLocation, write_report
from spark_apps.common.session import build_session
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

COMPLETED, PARTIAL, DRY_RUN = "COMPLETED", "PARTIAL", "DRY_RUN"
# The job's work: the session and the keyspace's endpoint -> its report (with an ``outcome``).
Work = Callable[["SparkSession", CqlEndpoint], dict[str, Any]]
# A report -> the audit row's (counts before, counts after).
Counts = Callable[[Mapping[str, Any]], tuple[dict[str, Any], dict[str, Any]]]


@dataclass(frozen=True)
class RunOptions:
    run_key: str
    dry_run: bool
    rate: float | None
    slices: int
    triggered_by: str
    dag_id: str | None
    dag_run_id: str | None
    report_bucket: str | None
    sample_size: int

    @staticmethod
    def add_arguments(parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("run")
        g.add_argument("--run-key", help="identity of this run; the same key resumes it (default: a new one)")
        g.add_argument("--dry-run", action="store_true", help="detect and report only; write nothing")
        g.add_argument("--rate", type=float, help="repairs per second for the whole job (default: unlimited)")
        g.add_argument("--slices", type=int, default=8, help="checkpointed units of repair work (default 8)")
        g.add_argument("--triggered-by", default="cli", help="who asked for this run (audit)")
        g.add_argument("--dag-id")
        g.add_argument("--dag-run-id")
        g.add_argument("--report-bucket", help="S3 bucket for the report [MAINTENANCE_REPORT_BUCKET]")
        g.add_argument("--sample-size", type=int, default=1000, help="fixed items listed in the report")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RunOptions:
        if args.rate is not None and args.rate <= 0:
            raise ValueError("--rate must be positive")
        if not 1 <= args.slices <= 4096:
            raise ValueError("--slices must be between 1 and 4096")
        run_key = args.run_key or f"adhoc-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"
        return cls(run_key, args.dry_run, args.rate, args.slices, args.triggered_by, args.dag_id,
                   args.dag_run_id, args.report_bucket, max(0, args.sample_size))


def job_parser(prog: str, description: str | None) -> argparse.ArgumentParser:
    """The arguments every job takes (connections, run options); the job adds its own."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    JobSettings.add_arguments(parser)
    RunOptions.add_arguments(parser)
    return parser


def detected_and_remaining(report: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    return report["detected"], report.get("remaining", {})


def exit_status(outcome: str) -> int:
    return 0 if outcome in (COMPLETED, DRY_RUN) else 1


def run_job(job: str, settings: JobSettings, options: RunOptions, audited_options: Mapping[str, Any], work: Work,
            *, counts: Counts = detected_and_remaining,
            summary: Callable[[Mapping[str, Any], str], str] | None = summary_block) -> int:
    """Run ``work`` inside the envelope; its exit status. ``audited_options``: the audit row's params;
    ``summary``: the block printed at the end of the log (None: the report's shape has none)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    endpoint = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace)
    cql = endpoint.session()
    ensure_tables(cql)
    audit = AuditLog(cql)
    location = ReportLocation.for_run(job, options.run_key, options.report_bucket)
    record = AuditRecord(job, options.run_key, datetime.now(UTC), options.triggered_by, options.dag_id,
                         options.dag_run_id, dict(audited_options), report_uri=location.uri)
    audit.write(record)
    spark = build_session(job, settings)
    try:
        report = work(spark, endpoint)
    except Exception:
        record.outcome = "FAILED"
        audit.write(record)
        raise
    finally:
        spark.stop()
    record.counts_before, record.counts_after = counts(report)
    record.outcome = report["outcome"]
    write_report(report, location)
    audit.write(record)
    print("REPORT " + json.dumps(report, default=str, sort_keys=True), flush=True)
    if summary is not None:
        print(summary(report, location.uri), flush=True)
    return exit_status(report["outcome"])
