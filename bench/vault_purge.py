"""Vault purge throughput: the purge_deleted_messages_vault job against its ceilings, measured in the same run.

    .venv/bin/python bench/vault_purge.py [--entries 100000] [--seed s3|disk] [--slices 8] [--concurrency 8]
        [--interrupt-after-slices N] [--record]

Seeds a throw-away keyspace and S3 buckets of a prefix of its own with ``--entries`` vault entries
spread over 18 months (tests/support/vault_seed.py: the adapter's statements, small contents), the
12 oldest months expired by ``--beginning-of-retention``. Each content object of an expired month is
also written, same key and bytes, into a *shadow* bucket that nothing references. Then, Spark
``local[2]`` in this process (JVM start-up excluded):

1. raw scan, Spark: the connector's read of ``deletedMessageMetadata`` (bucket, owner, message id;
   token-range splits), grouped per month;
2. raw scan, CQL: a plain paged ``SELECT`` with the Python driver (5,000 rows a page), one client;
3. raw bulk delete, S3: the shadow copies of the expired objects, by ``DeleteObjects`` of 1,000 keys
   (the keys known beforehand, no listing) with as many requests in flight as the purge can have
   (two Spark tasks times ``--concurrency``), then the shadow buckets themselves;
4. the purge, no rate limit, ``--slices`` slices, ``--concurrency`` S3 requests (and twice as many
   groups of owner partitions) in flight per task: months from ``userPerBucket``, per group the
   reads, the contents (``DeleteObjects``) while the ``storageInformation`` rows go (batched), then
   the partitions, then each month's bucket and listing, and the verification. The report's
   ``executorSeconds`` (thread-seconds per kind of request) is printed with the figures.

With ``--interrupt-after-slices N``, a first attempt of the purge (spark-submit, same run key) is
SIGKILLed once N slices are checkpointed; the measured purge resumes it (it skips the checkpointed
slices) and its rate is over the expired entries the killed attempt left.

Then the result is checked exactly (every expired row, storage row, listing and object gone, every
kept one there), a last purge with a new run key must find nothing to do (no expired month, no
entry deleted), and the ratios are printed: the purge's entries/s over each ceiling's rows/s.

Seeding (``--seed``): the CQL rows are always written with the adapter's own statements
(``execute_concurrent``, 64 in flight). The content objects are

* ``s3`` (default): S3 PUTs through the endpoint, 16 threads. S3Proxy's PUTs are the limit
  (~364 entries/s on a quiet machine, 73 under load);
* ``disk``: a **seeding shortcut** for the local stack only: each object is written straight into
  S3Proxy's filesystem backend (``jclouds.provider=filesystem-nio2``; ``jclouds.filesystem.basedir``
  read from ``$STACK_HOME/s3/s3proxy.conf``, or ``--s3proxy-basedir``), in the layout S3Proxy
  itself uses: one file ``<basedir>/<bucket>/<key>`` per object, with the extended attributes
  S3Proxy writes on a PUT (``user.user.content-md5``: the MD5 digest, S3Proxy's ETag, without
  which S3Proxy fails to list the bucket; ``user.user.content-type``: ``application/unknown``;
  ``user.user.storage-tier``: ``STANDARD``). The buckets are still created through S3. Before
  seeding, one object written this way is listed, read (bytes and ETag) and deleted through the
  S3 API (so the directory is really the one the endpoint serves), and after seeding a few seeded
  objects are checked through S3 (size, ETag). Only the seeding takes the shortcut: the purge and
  the raw delete delete every object through the S3 API as in production; the clean-up removes the
  bucket directories left on disk, and the exactness check counts the kept objects on disk (S3Proxy
  lists a directory of tens of thousands of objects at a few objects a second). The report says
  which seeding was used.

``--record`` appends the figures to docs/benchmarks.md with the machine, the date and the load.

A million entries: ``.venv/bin/python bench/vault_purge.py --entries 1000000 --seed disk``.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import platform
import shutil
import subprocess
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


class ShadowCopies:
    """Writes each content object of an expired month twice: into its vault bucket and, same key and bytes, into a
    shadow bucket nothing references, whose keys are kept for the raw bulk delete."""

    def __init__(self, write: Any, vault_prefix: str, shadow_prefix: str, expired: set[str]) -> None:
        self.write, self.vault_prefix, self.shadow_prefix, self.expired = write, vault_prefix, shadow_prefix, expired
        self.keys: dict[str, list[str]] = {self.shadow_prefix + month: [] for month in expired}

    def put(self, bucket: str, key: str, body: bytes) -> None:
        self.write(bucket, key, body)
        month = bucket[len(self.vault_prefix):]
        if month in self.expired:
            shadow = self.shadow_prefix + month
            self.write(shadow, key, body)
            self.keys[shadow].append(key)   # list.append is atomic: the seeding threads share it


def raw_bulk_delete(client: Any, keys: dict[str, list[str]], in_flight: int) -> tuple[int, float]:
    """The shadow copies deleted by DeleteObjects of 1,000 known keys, ``in_flight`` requests at once, then their
    buckets: the S3 ceiling of the purge's content deletes."""
    from concurrent.futures import ThreadPoolExecutor

    from spark_apps.common.s3_bulk import delete_keys, key_chunks

    requests = [(bucket, chunk) for bucket, bucket_keys in keys.items() for chunk in key_chunks(bucket_keys)]
    started = time.perf_counter()
    with ThreadPoolExecutor(in_flight) as pool:
        assert all(pool.map(lambda request: delete_keys(client, *request), requests))
    for bucket in keys:
        client.delete_bucket(Bucket=bucket)
    return sum(len(k) for k in keys.values()), time.perf_counter() - started


def job_arguments(prefix: str, concurrency: int) -> list[str]:
    """The purge's own arguments, the same for the interrupted attempt and the measured run."""
    return ["--beginning-of-retention", BEGINNING, "--bucket-prefix", prefix, "--concurrency", str(concurrency)]


def interrupted_attempt(session: CassandraSession, settings: Any, prefix: str, slices: int, concurrency: int,
                        run_key: str, after_slices: int) -> int:
    """A first attempt of the job under spark-submit with ``run_key``, SIGKILLed (its whole process
    group, as a lost driver would be) once ``after_slices`` slices are checkpointed: the measured run
    then resumes it. Returns the slices checkpointed when it died (the poll may see more than asked)."""
    import signal

    from spark_apps.common.bookkeeping import CHECKPOINTS_DDL
    from tests.support.maintenance import spark_submit
    from tests.support.vault_seed import PURGE_TASK_TYPE

    session.session.execute(CHECKPOINTS_DDL, timeout=60)   # the job creates it too; the poll needs it now
    args = ["--cassandra-hosts", settings.cassandra_hosts, "--cassandra-port", str(settings.cassandra_port),
            "--keyspace", settings.keyspace, "--s3-endpoint", settings.s3_endpoint, "--run-key", run_key,
            "--slices", str(slices), *job_arguments(prefix, concurrency)]
    attempt = spark_submit("purge_deleted_messages_vault", args, dict(os.environ), wait=False)
    assert isinstance(attempt, subprocess.Popen)
    try:
        while attempt.poll() is None:
            done = session.execute("SELECT slice FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                                   (PURGE_TASK_TYPE, run_key))
            if len(done) >= after_slices:
                break
            time.sleep(0.5)
    finally:
        ended = attempt.poll()
        if ended is None:
            os.killpg(attempt.pid, signal.SIGKILL)
        attempt.wait(timeout=60)
    if ended is not None:
        raise SystemExit(f"the attempt to interrupt ended by itself (exit {ended}) before {after_slices} "
                         "slice(s) were checkpointed")
    return len(session.execute("SELECT slice FROM maintenance_checkpoints WHERE job = ? AND run_key = ?",
                               (PURGE_TASK_TYPE, run_key)))


def purge(spark: Any, settings: Any, prefix: str, slices: int, concurrency: int,
          run_key: str) -> tuple[dict, float]:
    """The job's real run (not a dry run), without a rate limit: its report and its duration."""
    from spark_apps.common.bookkeeping import ensure_tables
    from spark_apps.common.cql import CqlEndpoint
    from spark_apps.common.procedure import RunOptions
    from spark_apps.jobs.purge_deleted_messages_vault import MonthPurgeRunner, PurgeDeletedMessagesVault

    endpoint = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace)
    ensure_tables(endpoint.session())
    procedure = PurgeDeletedMessagesVault()
    parser = argparse.ArgumentParser()
    procedure.add_arguments(parser)
    running = procedure.configure(parser.parse_args(job_arguments(prefix, concurrency)))
    options = RunOptions(run_key, False, None, slices, "bench", None, None, None, 10)
    started = time.perf_counter()
    report = MonthPurgeRunner(procedure).run(spark, settings, endpoint, options, running)
    return report, time.perf_counter() - started


def expired_entries_left(session: CassandraSession, expired_months: set[str]) -> int:
    from cassandra.query import SimpleStatement

    rows = session.session.execute(SimpleStatement("SELECT bucketName FROM deletedMessageMetadata", fetch_size=5000),
                                   timeout=120)
    return sum(1 for r in rows if r["bucketname"] in expired_months)


def expected_per_month(entries: int) -> dict[str, int]:
    """The seeding's spread: entry ``i`` goes to month ``i % 18`` (tests/support/vault_seed.py)."""
    from mailserver.vault.buckets import bucket_for

    counts = {bucket_for(m): 0 for m in MONTHS}
    for index, month in enumerate(MONTHS):
        counts[bucket_for(month)] = len(range(index, entries, len(MONTHS)))
    return counts


def exactness(session: CassandraSession, client: Any, prefix: str, disk: S3ProxyDisk | None,
              entries: int) -> list[str]:
    """What differs from "every expired entry and object gone, every kept one there" (empty: exact)."""
    from collections import Counter

    from cassandra.query import SimpleStatement

    from mailserver.vault.buckets import bucket_for

    def counts(cql: str) -> Counter[str]:
        rows = session.session.execute(SimpleStatement(cql, fetch_size=5000), timeout=120)
        return Counter(r["bucketname"] for r in rows)

    expected = {m: n for m, n in expected_per_month(entries).items() if n}
    kept = {bucket_for(m): expected.get(bucket_for(m), 0) for m in MONTHS[12:]}
    kept = {m: n for m, n in kept.items() if n}
    problems = []
    if (got := dict(counts("SELECT bucketName FROM deletedMessageMetadata"))) != kept:
        problems.append(f"deletedMessageMetadata per month {got} != {kept}")
    if (got := dict(counts("SELECT bucketName FROM storageInformation"))) != kept:
        problems.append(f"storageInformation per month {got} != {kept}")
    if (got := set(counts("SELECT bucketName FROM userPerBucket"))) != set(kept):
        problems.append(f"userPerBucket months {sorted(got)} != {sorted(kept)}")
    buckets = {b["Name"] for b in client.list_buckets().get("Buckets", []) if b["Name"].startswith(prefix)}
    if (got := {b[len(prefix):] for b in buckets}) != set(kept):
        problems.append(f"S3 buckets {sorted(got)} != {sorted(kept)}")
    for month, n in kept.items():
        if disk is not None:
            objects = sum(1 for _ in (disk.basedir / (prefix + month)).iterdir())
        else:
            objects = sum(len(page.get("Contents", [])) for page in
                          client.get_paginator("list_objects_v2").paginate(Bucket=prefix + month))
        if objects != n:
            problems.append(f"{month}: {objects} objects, {n} kept entries")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--owners", type=int, help="distinct owners (default: one per 1,000 entries)")
    parser.add_argument("--slices", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=8,
                        help="the purge job's --concurrency: S3 requests in flight per Spark task, with twice as "
                             "many groups of owner partitions (default 8)")
    parser.add_argument("--seed", choices=("s3", "disk"), default="s3",
                        help="content objects by S3 PUTs (default) or written straight into S3Proxy's filesystem "
                             "backend (a seeding shortcut, local stack only; see above)")
    parser.add_argument("--s3proxy-basedir", help="S3Proxy's jclouds.filesystem.basedir for --seed disk "
                                                  "(default: read from $STACK_HOME/s3/s3proxy.conf)")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--interrupt-after-slices", type=int, metavar="N",
                        help="first run the purge under spark-submit and SIGKILL it once N slices are "
                             "checkpointed; the measured run resumes it (same run key) and must still be exact")
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

    from mailserver.vault.buckets import bucket_for
    from spark_apps.common.cassandra_tables import read_table
    from spark_apps.common.s3_bulk import use_content_md5
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
    shadow_prefix = f"bs{tag}-"
    owners = [f"owner{n}@bench.example" for n in range(args.owners or max(1, args.entries // 1000))]
    settings = JobSettings("local[2]", ep.cassandra_hosts, ep.cassandra_port, config.keyspace, ep.s3_endpoint, None)
    in_flight = 2 * args.concurrency   # the purge's two Spark tasks, each with --concurrency S3 requests
    client = use_content_md5(make_client(store.config))
    load_start = os.getloadavg()
    spark = None
    try:
        phases: dict[str, float] = {}
        if disk is not None:
            disk.check_served(client, store.config.bucket_prefix + "probe-disk-seeding")
            print(f"seeding contents straight into {disk.basedir} (checked through {ep.s3_endpoint})", flush=True)
        expired_months = {bucket_for(m) for m in MONTHS[:12]}
        for month in expired_months:
            client.create_bucket(Bucket=shadow_prefix + month)
        shadow = ShadowCopies(disk.put if disk is not None else
                              (lambda bucket, key, body: client.put_object(Bucket=bucket, Key=key, Body=body)),
                              store.config.bucket_prefix, shadow_prefix, expired_months)
        started = time.perf_counter()
        seed_vault(session, store, MONTHS, args.entries, owners, keep=False, timings=phases, put_object=shadow.put)
        seed_s = time.perf_counter() - started
        if disk is not None:
            disk.check_samples(client)
        print(f"seeded {args.entries:,} entries (and shadow copies of the expired contents) in {seed_s:.0f} s ("
              + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items()) + ")", flush=True)
        spark = build_session("bench-vault-purge", settings, {"spark.driver.memory": args.driver_memory,
                                                              "spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("WARN")
        read_table(spark, settings, "userperbucket", ["bucketname"]).count()   # warm-up: classes, connector
        scanned, spark_s = spark_scan(spark, settings)
        print(f"spark scan: {scanned:,} rows in {spark_s:.1f} s", flush=True)
        cql_rows, cql_s = cql_scan(session)
        print(f"cql scan: {cql_rows:,} rows in {cql_s:.1f} s", flush=True)
        raw_objects, raw_s = raw_bulk_delete(client, shadow.keys, in_flight)
        print(f"raw bulk delete: {raw_objects:,} objects in {raw_s:.1f} s", flush=True)
        run_key = f"bench-{uuid.uuid4().hex[:8]}"
        before_resume = None
        killed_after = 0
        if args.interrupt_after_slices:
            killed_after = interrupted_attempt(session, settings, store.config.bucket_prefix, args.slices,
                                               args.concurrency, run_key, args.interrupt_after_slices)
            before_resume = expired_entries_left(session, expired_months)
            print(f"interrupted once {args.interrupt_after_slices} slice(s) were checkpointed ({killed_after} "
                  f"when killed): {before_resume:,} expired entries left for the resumed run", flush=True)
        report, purge_s = purge(spark, settings, store.config.bucket_prefix, args.slices, args.concurrency, run_key)
        # A resumed run's report also counts what the killed attempt's checkpointed slices deleted: its
        # rate is over the entries it found left.
        deleted = report.get("deletedEntries", 0) if before_resume is None else before_resume
        print(f"purge: {deleted:,} entries deleted in {purge_s:.1f} s ({deleted / purge_s:,.0f}/s, "
              f"{report['outcome']}, {len(report['deletedBuckets'])} months dropped; phases "
              + ", ".join(f"{k} {v:.1f} s" for k, v in report["phaseSeconds"].items()) + ")", flush=True)
        skipped = report["slices"]["skippedAlreadyDone"]
        if before_resume is not None and len(skipped) != killed_after:
            problems_resume = [f"the resumed run skipped slices {skipped}, {killed_after} were checkpointed"]
        else:
            problems_resume = []
        problems = problems_resume + exactness(session, client, store.config.bucket_prefix, disk, args.entries)
        print("exact: " + ("yes" if not problems else "NO: " + "; ".join(problems)), flush=True)
        # A later run (new run key) must find nothing left: the resumed run did the rest.
        again, _ = purge(spark, settings, store.config.bucket_prefix, args.slices, args.concurrency,
                         f"bench-{uuid.uuid4().hex[:8]}")
        nothing_left = (again["expiredBuckets"] == 0 and again.get("deletedEntries", 0) == 0
                        and again["outcome"] == "COMPLETED")
        print(f"a later purge: {again['expiredBuckets']} expired months, {again.get('deletedEntries', 0)} entries "
              f"deleted, {again['outcome']}", flush=True)
        if not nothing_left:
            problems.append(f"a later purge found work: {again['expiredBuckets']} months, "
                            f"{again.get('deletedEntries', 0)} entries, {again['outcome']}")
        rate, scan_rate, cql_rate, raw_rate = (deleted / purge_s, scanned / spark_s, cql_rows / cql_s,
                                               raw_objects / raw_s)
        seeding = ("content objects written straight into S3Proxy's filesystem backend (`--seed disk`, a "
                   "seeding shortcut only: the purge deletes them through the S3 API), 16 threads"
                   if disk is not None else "S3 puts, 16 threads")
        load_end = os.getloadavg()
        lines = [
            f"### Vault purge at {args.entries:,} entries ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{platform.node() or 'host'}, {os.cpu_count()} cores, Spark local[2])",
            "",
            f"`bench/vault_purge.py --entries {args.entries} --slices {args.slices} --concurrency {args.concurrency} "
            f"--seed {args.seed}"
            + (f" --interrupt-after-slices {args.interrupt_after_slices}" if args.interrupt_after_slices else "")
            + f"`: {args.entries:,} entries over "
            f"18 months and {len(owners):,} owners, the 12 oldest months expired ({report['expiredBuckets']} months). "
            f"Load average (1/5/15 min) {load_start[0]:.1f}/{load_start[1]:.1f}/{load_start[2]:.1f} at the start, "
            f"{load_end[0]:.1f}/{load_end[1]:.1f}/{load_end[2]:.1f} at the end"
            + (" (the machine was busy before the run: absolute figures are low and noisy)" if load_start[0] > 4
               else " (the load during the run is its own: Spark's Python workers, Cassandra, S3Proxy)")
            + ". JVM start-up and the connector's first read excluded; seeding "
            f"({seeding}, with shadow copies of the expired contents; concurrent CQL inserts with the adapter's "
            f"statements) took {seed_s:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items()) + ").",
            "",
            "| | rows or objects | seconds | per second | purge / this |",
            "|---|---|---|---|---|",
            f"| raw scan of `deletedMessageMetadata`, Spark connector, grouped per month "
            f"| {scanned:,} | {spark_s:.1f} | {scan_rate:,.0f} | **{rate / scan_rate:.2f}** |",
            f"| raw scan of `deletedMessageMetadata`, plain paged CQL (Python driver, one client) "
            f"| {cql_rows:,} | {cql_s:.1f} | {cql_rate:,.0f} | {rate / cql_rate:.2f} |",
            f"| raw bulk delete of the same objects (shadow copies, `DeleteObjects` of 1,000 known keys, {in_flight} "
            f"in flight, then the buckets) | {raw_objects:,} | {raw_s:.1f} | {raw_rate:,.0f} | {rate / raw_rate:.2f} |",
            f"| purge job, no rate limit, {args.slices} slices, {args.concurrency} S3 requests in flight per task "
            f"({len(report['deletedBuckets'])} months dropped, {report['outcome']}; exact: "
            f"{'yes' if not problems else 'NO'}) | {deleted:,} entries | {purge_s:.1f} | **{rate:,.0f}** | |",
            "",
            *([f"Interrupted and resumed: a first attempt under spark-submit was SIGKILLed once "
               f"{args.interrupt_after_slices} slice(s) were checkpointed ({killed_after} when killed), "
               f"{before_resume:,} expired entries left; the measured run resumed it with the same run key "
               f"(skipping slices {skipped}; its rate is over what it deleted) and the end state is "
               f"{'exact' if not problems else 'NOT exact'}.", ""] if before_resume is not None else []),
            f"A later purge with a new run key found {again['expiredBuckets']} expired months and deleted "
            f"{again.get('deletedEntries', 0)} entries ({again['outcome']}).",
            "",
            "The purge's phases (seconds): " + ", ".join(f"{k} {v:.1f}" for k, v in report["phaseSeconds"].items())
            + ".",
            "The executors' thread-seconds per kind of request (both tasks, all threads): "
            + ", ".join(f"{k} {v:.1f}" for k, v in report.get("executorSeconds", {}).items()) + ".",
            "",
        ]
        print("\n".join(lines))
        if args.record:
            with (ROOT / "docs" / "benchmarks.md").open("a") as out:
                out.write("\n" + "\n".join(lines))
        return 0 if not problems and report["outcome"] == "COMPLETED" else 1
    finally:
        if spark is not None:
            spark.stop()
        cleanup(session, config.keyspace, store, disk, shadow_prefix)


def cleanup(session: CassandraSession, keyspace: str, store: S3BlobStore, disk: S3ProxyDisk | None,
            shadow_prefix: str) -> None:
    """The keyspace and the buckets of this run, each step tried even when another fails (a backend restarted
    by someone else's test run, say), every failure printed."""
    steps = [("keyspace", lambda: session.session.execute(f"DROP KEYSPACE IF EXISTS {keyspace}", timeout=120)),
             ("cql session", session.close)]
    if disk is not None:
        steps.append(("bucket directories", lambda: disk.remove_buckets(store.config.bucket_prefix)))
        steps.append(("shadow bucket directories", lambda: disk.remove_buckets(shadow_prefix)))
    steps.append(("buckets", lambda: [store.delete_bucket(b) for b in store.list_buckets()]))
    steps.append(("shadow buckets", lambda: delete_buckets_of(make_client(store.config), shadow_prefix)))
    for what, step in steps:
        try:
            step()
        except Exception as exc:
            print(f"clean-up of the {what} failed, do it by hand: {type(exc).__name__}: {exc}", file=sys.stderr)


def delete_buckets_of(client: Any, prefix: str) -> None:
    """Buckets of ``prefix`` left (a run stopped before its raw delete), emptied first."""
    from spark_apps.common.s3_bulk import drop_bucket, use_content_md5

    for bucket in client.list_buckets().get("Buckets", []):
        if bucket["Name"].startswith(prefix):
            drop_bucket(use_content_md5(client), bucket["Name"])


if __name__ == "__main__":
    sys.exit(main())
