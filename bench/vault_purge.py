"""Vault purge throughput: the purge_deleted_messages_vault job against raw scans of ``deletedMessageMetadata``.

    .venv/bin/python bench/vault_purge.py [--entries 100000] [--record]

Seeds a throw-away keyspace and S3 buckets of a prefix of its own with ``--entries`` vault entries
spread over 18 months (tests/support/vault_seed.py: the adapter's statements, small contents), the
12 oldest months expired by ``--beginning-of-retention``. Then, Spark ``local[2]`` in this process
(JVM start-up excluded):

1. raw scan, Spark: the connector's read of ``deletedMessageMetadata`` (the columns the job's
   detection reads, token-range splits), grouped per month: the job's read path without its filter
   and repair;
2. raw scan, CQL: a plain paged ``SELECT`` with the Python driver (5,000 rows a page), one client;
3. the job's procedure, no rate limit, ``--slices`` slices: detection, per entry the metadata
   re-read, the content delete (S3), the ``storageInformation`` and metadata deletes, then the
   verifying detection and the months dropped.

``--record`` appends the figures to docs/benchmarks.md with the machine, the date and the load.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cassandra.cluster import EXEC_PROFILE_DEFAULT  # noqa: E402

from include.stack import artifacts  # noqa: E402
from include.stack.endpoints import Endpoints  # noqa: E402
from include.stack.settings import StackSettings  # noqa: E402
from mailserver.blob.s3 import S3BlobStore, S3Config  # noqa: E402
from mailserver.cassandra.config import CassandraConfig  # noqa: E402
from mailserver.cassandra.schema import create_schema  # noqa: E402
from mailserver.cassandra.session import CassandraSession  # noqa: E402
from tests.support.vault_seed import months_from, seed_vault  # noqa: E402

MONTHS = months_from(datetime(2024, 6, 10, 12, tzinfo=UTC), 18)   # 2024-06 .. 2025-11
BEGINNING = "2025-06-01T00:00:01Z"                                   # the 12 oldest expired


def spark_scan(spark: Any, settings: Any) -> tuple[int, float]:
    from spark_apps.common.cassandra_tables import read_table

    started = time.perf_counter()
    rows = read_table(spark, settings, "deletedmessagemetadata", ["bucketname", "owner", "messageid"]) \
        .groupBy("bucketname").count().collect()
    return sum(r["count"] for r in rows), time.perf_counter() - started


def cql_scan(session: CassandraSession) -> tuple[int, float]:
    from cassandra.query import SimpleStatement

    started = time.perf_counter()
    statement = SimpleStatement("SELECT bucketName, owner, messageId FROM deletedMessageMetadata", fetch_size=5000)
    count = sum(1 for _ in session.session.execute(statement, timeout=120))
    return count, time.perf_counter() - started


def purge(spark: Any, settings: Any, prefix: str, slices: int) -> tuple[dict, float]:
    from spark_apps.common.bookkeeping import ensure_tables
    from spark_apps.common.cql import CqlEndpoint
    from spark_apps.common.procedure import RunOptions
    from spark_apps.jobs.purge_deleted_messages_vault import PurgeDeletedMessagesVault, PurgeRunner

    endpoint = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace)
    ensure_tables(endpoint.session())
    procedure = PurgeDeletedMessagesVault()
    parser = argparse.ArgumentParser()
    procedure.add_arguments(parser)
    running = procedure.configure(parser.parse_args(["--beginning-of-retention", BEGINNING,
                                                     "--bucket-prefix", prefix]))
    options = RunOptions(f"bench-{uuid.uuid4().hex[:8]}", False, None, slices, "bench", None, None, None, 10)
    started = time.perf_counter()
    report = PurgeRunner(procedure).run(spark, settings, endpoint, options, running)
    return report, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--owners", type=int, help="distinct owners (default: one per 1,000 entries)")
    parser.add_argument("--slices", type=int, default=8)
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = parser.parse_args()

    ep = Endpoints.from_env() or Endpoints.from_settings(StackSettings())
    settings_ = StackSettings()
    os.environ.setdefault("JAVA_HOME", settings_.java_home)
    os.environ["SPARK_CONNECTOR_JARS"] = ",".join(str(j) for j in artifacts.spark_jars(settings_))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ.update({"S3_ENDPOINT": ep.s3_endpoint, "S3_ACCESS_KEY": ep.s3_access_key,
                       "S3_SECRET_KEY": ep.s3_secret_key, "S3_REGION": ep.s3_region})

    from spark_apps.common.cassandra_tables import read_table
    from spark_apps.common.session import build_session
    from spark_apps.common.settings import JobSettings

    tag = uuid.uuid4().hex[:8]
    config = CassandraConfig(hosts=tuple(ep.cassandra_hosts.split(",")), port=ep.cassandra_port,
                             keyspace=f"bench_vault_{tag}")
    bootstrap = CassandraSession.connect(config, use_keyspace=False)
    bootstrap.session.get_execution_profile(EXEC_PROFILE_DEFAULT).request_timeout = 120   # a shared, busy node
    create_schema(bootstrap.session, config)
    bootstrap.close()
    session = CassandraSession.connect(config)
    store = S3BlobStore(S3Config(endpoint_url=ep.s3_endpoint, access_key=ep.s3_access_key,
                                 secret_key=ep.s3_secret_key, region=ep.s3_region, bucket_prefix=f"bv{tag}-",
                                 default_bucket=f"bench-vault-{tag}"))
    owners = [f"owner{n}@bench.example" for n in range(args.owners or max(1, args.entries // 1000))]
    settings = JobSettings("local[2]", ep.cassandra_hosts, ep.cassandra_port, config.keyspace, ep.s3_endpoint, None)
    load_start = os.getloadavg()
    spark = None
    try:
        started = time.perf_counter()
        seed_vault(session, store, MONTHS, args.entries, owners, keep=False)
        seed_s = time.perf_counter() - started
        print(f"seeded {args.entries:,} entries in {seed_s:.0f} s", flush=True)
        spark = build_session("bench-vault-purge", settings, {"spark.driver.memory": args.driver_memory,
                                                              "spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("WARN")
        read_table(spark, settings, "userperbucket", ["bucketname"]).count()   # warm-up: classes, connector
        scanned, spark_s = spark_scan(spark, settings)
        print(f"spark scan: {scanned:,} rows in {spark_s:.1f} s", flush=True)
        cql_rows, cql_s = cql_scan(session)
        print(f"cql scan: {cql_rows:,} rows in {cql_s:.1f} s", flush=True)
        report, purge_s = purge(spark, settings, store.config.bucket_prefix, args.slices)
        deleted = report.get("deletedEntries", 0)
        print(f"purge: {deleted:,} entries deleted in {purge_s:.0f} s ({report['outcome']})", flush=True)
        load_end = os.getloadavg()
        lines = [
            f"### Vault purge at {args.entries:,} entries ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{platform.node() or 'host'}, {os.cpu_count()} cores, Spark local[2])",
            "",
            f"`bench/vault_purge.py --entries {args.entries} --slices {args.slices}`: {args.entries:,} entries over "
            f"18 months and {len(owners):,} owners, the 12 oldest months expired ({report['expiredBuckets']} months). "
            f"Load average (1/5/15 min) {load_start[0]:.1f}/{load_start[1]:.1f}/{load_start[2]:.1f} at the start, "
            f"{load_end[0]:.1f}/{load_end[1]:.1f}/{load_end[2]:.1f} at the end: the machine was shared with "
            "other people's test runs, absolute figures are low and noisy. JVM start-up and the connector's first "
            "read excluded; seeding "
            f"(S3 puts, 16 threads, and concurrent CQL inserts) took {seed_s:.0f} s "
            f"({args.entries / seed_s:,.0f} entries/s).",
            "",
            "| | entries | seconds | entries/s |",
            "|---|---|---|---|",
            f"| raw scan of `deletedMessageMetadata`, Spark connector (the job's read path), grouped per month "
            f"| {scanned:,} | {spark_s:.1f} | {scanned / spark_s:,.0f} |",
            f"| raw scan of `deletedMessageMetadata`, plain paged CQL (Python driver, one client) "
            f"| {cql_rows:,} | {cql_s:.1f} | {cql_rows / cql_s:,.0f} |",
            f"| purge job, no rate limit, {args.slices} slices (detect, per entry: re-read, S3 delete, 2 CQL "
            f"deletes; verify; {len(report['deletedBuckets'])} months dropped) | {deleted:,} deleted "
            f"({report['outcome']}) | {purge_s:.0f} | **{deleted / purge_s:,.0f}** deleted "
            f"({args.entries / purge_s:,.0f} scanned) |",
            "",
        ]
        print("\n".join(lines))
        if args.record:
            with (ROOT / "docs" / "benchmarks.md").open("a") as out:
                out.write("\n" + "\n".join(lines))
        return 0
    finally:
        if spark is not None:
            spark.stop()
        session.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=120)
        session.close()
        for bucket in store.list_buckets():
            store.delete_bucket(bucket)


if __name__ == "__main__":
    sys.exit(main())
