"""Vault purge throughput: the purge_deleted_messages_vault job against raw scans of ``deletedMessageMetadata``.

    .venv/bin/python bench/vault_purge.py [--entries 100000] [--seed s3|disk] [--concurrency 8] [--record]

Seeds a throw-away keyspace and S3 buckets of a prefix of its own with ``--entries`` vault entries
spread over 18 months (tests/support/vault_seed.py: the adapter's statements, small contents), the
12 oldest months expired by ``--beginning-of-retention``. Then, Spark ``local[2]`` in this process
(JVM start-up excluded):

1. raw scan, Spark: the connector's read of ``deletedMessageMetadata`` (the columns the job's
   detection reads, token-range splits), grouped per month: the job's read path without its filter
   and repair;
2. raw scan, CQL: a plain paged ``SELECT`` with the Python driver (5,000 rows a page), one client;
3. the job's procedure, no rate limit, ``--slices`` slices, ``--concurrency`` entries in flight per
   partition (the job's option; 1 = one entry at a time): detection, per entry the metadata
   re-read, the content delete (S3), the ``storageInformation`` and metadata deletes, then the
   verifying detection and the months dropped.

Seeding (``--seed``): the CQL rows are always written with the adapter's own statements
(``execute_concurrent``, 64 in flight). The content objects are

* ``s3`` (default): S3 PUTs through the endpoint, 16 threads. S3Proxy's PUTs are the limit
  (~364 entries/s on a quiet machine, 73 under load: a million entries would take 46 min or more);
* ``disk``: a **seeding shortcut** for the local stack only: each object is written straight into
  S3Proxy's filesystem backend (``jclouds.provider=filesystem-nio2``; ``jclouds.filesystem.basedir``
  read from ``$STACK_HOME/s3/s3proxy.conf``, or ``--s3proxy-basedir``), in the layout S3Proxy
  itself uses: one file ``<basedir>/<bucket>/<key>`` per object, with the extended attributes
  S3Proxy writes on a PUT (``user.user.content-md5``: the MD5 digest, S3Proxy's ETag, without
  which S3Proxy fails to list the bucket; ``user.user.content-type``: ``application/unknown``;
  ``user.user.storage-tier``: ``STANDARD``). The buckets are still created through S3. Before
  seeding, one object written this way is listed, read (bytes and ETag) and deleted through the
  S3 API (so the directory is really the one the endpoint serves), and after seeding a few seeded
  objects are checked through S3 (size, ETag). Only the seeding takes the shortcut: the purge
  deletes every content object through the S3 API as in production, and the clean-up removes the
  bucket directories left on disk. The report says which seeding was used.

``--record`` appends the figures to docs/benchmarks.md with the machine, the date and the load.

A million entries (issue 14's figure):
``.venv/bin/python bench/vault_purge.py --entries 1000000 --seed disk --concurrency 8``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import shutil
import sys
import threading
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
from mailserver.blob.s3 import S3BlobStore, S3Config, make_client  # noqa: E402
from mailserver.cassandra.config import CassandraConfig  # noqa: E402
from mailserver.cassandra.schema import create_schema  # noqa: E402
from mailserver.cassandra.session import CassandraSession  # noqa: E402
from tests.support.vault_seed import months_from, seed_vault  # noqa: E402

MONTHS = months_from(datetime(2024, 6, 10, 12, tzinfo=UTC), 18)   # 2024-06 .. 2025-11
BEGINNING = "2025-06-01T00:00:01Z"                                   # the 12 oldest expired


class S3ProxyDisk:
    """Writes content objects straight into S3Proxy's filesystem backend, as S3Proxy's own PUT leaves them.

    A seeding shortcut for the local stack (see the module's docstring): reads and deletes still go
    through the S3 API."""

    CONTENT_TYPE = b"application/unknown"   # what S3Proxy records for a PUT without a Content-Type
    STORAGE_TIER = b"STANDARD"

    def __init__(self, basedir: Path) -> None:
        if not basedir.is_dir():
            raise SystemExit(f"S3Proxy's filesystem backend {basedir} is not a directory of this machine")
        self.basedir = basedir
        self.samples: list[tuple[str, str, bytes]] = []
        self._lock = threading.Lock()

    @classmethod
    def of_stack(cls, settings: StackSettings, given: str | None) -> S3ProxyDisk:
        if given:
            return cls(Path(given))
        conf = settings.service_dir("s3") / "s3proxy.conf"
        try:
            props = dict(line.split("=", 1) for line in conf.read_text().splitlines() if "=" in line)
        except OSError as exc:
            raise SystemExit(f"--seed disk: cannot read {conf} ({exc}); give --s3proxy-basedir") from exc
        if props.get("jclouds.provider") not in ("filesystem", "filesystem-nio2"):
            raise SystemExit(f"--seed disk: {conf} is not a filesystem backend ({props.get('jclouds.provider')})")
        return cls(Path(props["jclouds.filesystem.basedir"]))

    def put(self, bucket: str, key: str, body: bytes) -> None:
        if "/" in key or key.startswith(".") or "/" in bucket:
            raise ValueError(f"not a flat object name: {bucket}/{key}")
        path = self.basedir / bucket / key
        with open(path, "wb") as out:
            out.write(body)
            fd = out.fileno()
            os.setxattr(fd, "user.user.content-md5", hashlib.md5(body).digest())   # noqa: S324 (S3's ETag)
            os.setxattr(fd, "user.user.content-type", self.CONTENT_TYPE)
            os.setxattr(fd, "user.user.storage-tier", self.STORAGE_TIER)
        if len(self.samples) < 5:
            with self._lock:
                if len(self.samples) < 5:
                    self.samples.append((bucket, key, body))

    def check_served(self, client: Any, bucket: str) -> None:
        """An object written on disk is listed, read and deleted through the S3 API (the endpoint serves this
        directory), and the deletion removes the file."""
        key, body = str(uuid.uuid4()), b"Subject: written on disk\r\n\r\nprobe\r\n"
        client.create_bucket(Bucket=bucket)
        try:
            if not (self.basedir / bucket).is_dir():
                raise SystemExit(f"--seed disk: {client.meta.endpoint_url} does not store its buckets in "
                                 f"{self.basedir} (another stack? give --s3proxy-basedir or STACK_HOME)")
            self.put(bucket, key, body)
            listed = {o["Key"]: o for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])}
            got = client.get_object(Bucket=bucket, Key=key)
            etag = '"' + hashlib.md5(body).hexdigest() + '"'   # noqa: S324
            ok = (key in listed and listed[key]["Size"] == len(body) and got["Body"].read() == body
                  and got["ETag"] == etag)
            client.delete_object(Bucket=bucket, Key=key)
            if not ok or (self.basedir / bucket / key).exists():
                raise SystemExit(f"--seed disk: {self.basedir} is not what {client.meta.endpoint_url} serves")
        finally:
            client.delete_bucket(Bucket=bucket)
        self.samples.clear()

    def check_samples(self, client: Any) -> None:
        for bucket, key, body in self.samples:
            head = client.head_object(Bucket=bucket, Key=key)
            etag = '"' + hashlib.md5(body).hexdigest() + '"'   # noqa: S324
            assert head["ContentLength"] == len(body) and head["ETag"] == etag, (bucket, key, head)

    def remove_buckets(self, prefix: str) -> None:
        """The bench's bucket directories, whatever the purge left in them (faster than S3 deletes)."""
        for path in self.basedir.iterdir():
            if path.name.startswith(prefix) and path.is_dir():
                shutil.rmtree(path)


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


def purge(spark: Any, settings: Any, prefix: str, slices: int, concurrency: int) -> tuple[dict, float, float]:
    """The job's report, its duration and the time its slices' repairs took (the rest: detections, months)."""
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
                                                     "--bucket-prefix", prefix, "--concurrency", str(concurrency)]))
    options = RunOptions(f"bench-{uuid.uuid4().hex[:8]}", False, None, slices, "bench", None, None, None, 10)

    class TimedRunner(PurgeRunner):
        repairing = 0.0

        def _repair_slice(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super()._repair_slice(*args, **kwargs)
            finally:
                self.repairing += time.perf_counter() - started

    runner = TimedRunner(procedure)
    started = time.perf_counter()
    report = runner.run(spark, settings, endpoint, options, running)
    return report, time.perf_counter() - started, runner.repairing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--owners", type=int, help="distinct owners (default: one per 1,000 entries)")
    parser.add_argument("--slices", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=8,
                        help="the purge job's --concurrency: entries in flight per partition (default 8; 1 = one "
                             "at a time, the job before it had the option)")
    parser.add_argument("--seed", choices=("s3", "disk"), default="s3",
                        help="content objects by S3 PUTs (default) or written straight into S3Proxy's filesystem "
                             "backend (a seeding shortcut, local stack only; see above)")
    parser.add_argument("--s3proxy-basedir", help="S3Proxy's jclouds.filesystem.basedir for --seed disk "
                                                  "(default: read from $STACK_HOME/s3/s3proxy.conf)")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = parser.parse_args()
    if not 1 <= args.concurrency <= 64:
        parser.error("--concurrency must be between 1 and 64 (the job's bounds)")
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("mailplatform").setLevel(logging.INFO)   # the job's progress: one line per slice

    ep = Endpoints.from_env() or Endpoints.from_settings(StackSettings())
    settings_ = StackSettings()
    disk = S3ProxyDisk.of_stack(settings_, args.s3proxy_basedir) if args.seed == "disk" else None
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
        phases: dict[str, float] = {}
        if disk is not None:
            disk.check_served(make_client(store.config), store.config.bucket_prefix + "probe-disk-seeding")
            print(f"seeding contents straight into {disk.basedir} (checked through {ep.s3_endpoint})", flush=True)
        started = time.perf_counter()
        seed_vault(session, store, MONTHS, args.entries, owners, keep=False, timings=phases,
                   put_object=disk.put if disk is not None else None)
        seed_s = time.perf_counter() - started
        if disk is not None:
            disk.check_samples(make_client(store.config))
        print(f"seeded {args.entries:,} entries in {seed_s:.0f} s ({args.entries / seed_s:,.0f}/s; "
              + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items()) + ")", flush=True)
        spark = build_session("bench-vault-purge", settings, {"spark.driver.memory": args.driver_memory,
                                                              "spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("WARN")
        read_table(spark, settings, "userperbucket", ["bucketname"]).count()   # warm-up: classes, connector
        scanned, spark_s = spark_scan(spark, settings)
        print(f"spark scan: {scanned:,} rows in {spark_s:.1f} s", flush=True)
        cql_rows, cql_s = cql_scan(session)
        print(f"cql scan: {cql_rows:,} rows in {cql_s:.1f} s", flush=True)
        report, purge_s, repair_s = purge(spark, settings, store.config.bucket_prefix, args.slices,
                                          args.concurrency)
        deleted = report.get("deletedEntries", 0)
        print(f"purge: {deleted:,} entries deleted in {purge_s:.0f} s ({deleted / purge_s:,.0f}/s, "
              f"{report['outcome']}, job's durationSeconds {report['durationSeconds']}); its slices' repairs "
              f"{repair_s:.0f} s ({deleted / repair_s:,.0f}/s)", flush=True)
        seeding = ("content objects written straight into S3Proxy's filesystem backend (`--seed disk`, a "
                   "seeding shortcut only: the purge deletes them through the S3 API), 16 threads"
                   if disk is not None else "S3 puts, 16 threads")
        load_end = os.getloadavg()
        lines = [
            f"### Vault purge at {args.entries:,} entries ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{platform.node() or 'host'}, {os.cpu_count()} cores, Spark local[2])",
            "",
            f"`bench/vault_purge.py --entries {args.entries} --slices {args.slices} --concurrency {args.concurrency} "
            f"--seed {args.seed}`: {args.entries:,} entries over "
            f"18 months and {len(owners):,} owners, the 12 oldest months expired ({report['expiredBuckets']} months). "
            f"Load average (1/5/15 min) {load_start[0]:.1f}/{load_start[1]:.1f}/{load_start[2]:.1f} at the start, "
            f"{load_end[0]:.1f}/{load_end[1]:.1f}/{load_end[2]:.1f} at the end"
            + (" (the machine was busy before the run: absolute figures are low and noisy)" if load_start[0] > 4
               else " (the load during the run is its own: Spark's Python workers, Cassandra, S3Proxy)")
            + ". JVM start-up and the connector's first read excluded; seeding "
            f"({seeding}; concurrent CQL inserts with the adapter's statements) took {seed_s:.0f} s "
            f"({args.entries / seed_s:,.0f} entries/s: "
            + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items()) + ").",
            "",
            "| | entries | seconds | entries/s |",
            "|---|---|---|---|",
            f"| raw scan of `deletedMessageMetadata`, Spark connector (the job's read path), grouped per month "
            f"| {scanned:,} | {spark_s:.1f} | {scanned / spark_s:,.0f} |",
            f"| raw scan of `deletedMessageMetadata`, plain paged CQL (Python driver, one client) "
            f"| {cql_rows:,} | {cql_s:.1f} | {cql_rows / cql_s:,.0f} |",
            f"| purge job, no rate limit, {args.slices} slices, {args.concurrency} entries in flight per partition "
            f"(detect, per entry: re-read, S3 delete, 2 CQL "
            f"deletes; verify; {len(report['deletedBuckets'])} months dropped) | {deleted:,} deleted "
            f"({report['outcome']}) | {purge_s:.0f} | **{deleted / purge_s:,.0f}** deleted "
            f"({args.entries / purge_s:,.0f} scanned) |",
            f"| of which the {args.slices} slices' repairs (the per-entry work, detections and months dropped "
            f"excluded) | {deleted:,} | {repair_s:.0f} | {deleted / repair_s:,.0f} |",
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
        cleanup(session, config.keyspace, store, disk)


def cleanup(session: CassandraSession, keyspace: str, store: S3BlobStore, disk: S3ProxyDisk | None) -> None:
    """The keyspace and the buckets of this run, each step tried even when another fails (a backend restarted
    by someone else's test run, say), every failure printed."""
    steps = [("keyspace", lambda: session.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)),
             ("cql session", session.close)]
    if disk is not None:
        steps.append(("bucket directories", lambda: disk.remove_buckets(store.config.bucket_prefix)))
    steps.append(("buckets", lambda: [store.delete_bucket(b) for b in store.list_buckets()]))
    for what, step in steps:
        try:
            step()
        except Exception as exc:
            print(f"clean-up of the {what} failed, do it by hand: {type(exc).__name__}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
