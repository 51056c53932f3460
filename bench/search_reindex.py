"""Search reindex throughput: the reindex_mailboxes job (rebuildAll) against its two ceilings measured in the
same run (a raw S3 GET of the same blobs, a raw ``_bulk`` of the same documents) and James's default
``messagesPerSecond`` (50).

    .venv/bin/python bench/search_reindex.py [-n 100000] [--contents 64] [--record]

Seeds a throw-away keyspace with Spark (``imapUidTable``, ``messageV3``, ``mailboxPathV3``: N messages
in mailboxes of 1,000) whose contents are ``--contents`` distinct MIME messages in S3 (every message is
still fetched from S3 and parsed on its own: only the objects repeat). Then, Spark ``local[2]`` in this
process (JVM start-up excluded):

1. the job's procedure, ``rebuildAll``, no rate limit: detect (Cassandra scan + index scan), re-read
   ``imapUidTable`` and ``messageV3`` per message (the connector's joins), fetch both blobs, build the
   document with the server's code, ``_bulk`` through the write alias, then the verifying detection;
2. ceiling one, S3: the header and body blobs of every message GET by the same Spark executors, with the
   job's client (``S3Access.reader``) and as many requests in flight per partition (``FETCH_THREADS``), read
   and dropped;
3. ceiling two, OpenSearch: the documents the job wrote, read back, and sent to a fresh index with
   ``helpers.parallel_bulk`` (as many requests in flight as the job has in all, ``BATCH`` documents each);
4. James: ``messagesPerSecond`` defaults to 50, so N / 50 seconds.

The job's ratio is taken against the slower ceiling. ``--record`` appends the figures to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.load_report import host_speed  # noqa: E402
from include.stack import artifacts  # noqa: E402
from include.stack.endpoints import Endpoints  # noqa: E402
from include.stack.settings import StackSettings  # noqa: E402
from mailserver.cassandra.config import CassandraConfig  # noqa: E402
from mailserver.cassandra.schema import create_schema  # noqa: E402
from mailserver.cassandra.session import CassandraSession  # noqa: E402

PER_MAILBOX = 1000
JAMES_DEFAULT_RATE = 50
UID_SCHEMA = ("messageid string, mailboxid string, uid long, modseq long, flaganswered boolean, flagdeleted boolean, "
              "flagdraft boolean, flagflagged boolean, flagrecent boolean, flagseen boolean, flaguser boolean, "
              "userflags array<string>, internaldate timestamp, save_date timestamp, threadid string")
CONTENT_SCHEMA = ("messageid string, internaldate timestamp, bodystartoctet int, bodyoctets long, "
                  "fullcontentoctets long, bodycontent string, headercontent string")
PATH_SCHEMA = "namespace string, user string, mailboxname string, mailboxid string, uidvalidity long"


def mime(k: int) -> tuple[bytes, bytes]:
    """Header and body of the k-th distinct content (plain text, a few KB, words varying with k)."""
    header = (f"From: Sender {k} <sender{k}@example.com>\r\nTo: bench@example.com\r\nSubject: report {k} on "
              f"topic {k % 7}\r\nDate: Tue, 24 Nov 2026 10:{k % 60:02d}:00 +0000\r\n"
              f"Message-ID: <{k}.bench@example.com>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n").encode()
    line = f"Paragraph about subject {k} and the quarterly numbers, item {k * 7}.\r\n".encode()
    return header, line * 40


def seed(spark: Any, keyspace: str, bucket: str, s3: Any, n: int, contents: int) -> float:
    started = time.perf_counter()
    sizes = {}
    for k in range(contents):
        header, body = mime(k)
        s3.put_object(Bucket=bucket, Key=f"bench-h-{k}", Body=header)
        s3.put_object(Bucket=bucket, Key=f"bench-b-{k}", Body=body)
        sizes[k] = (len(header), len(body))
    mailboxes = (n + PER_MAILBOX - 1) // PER_MAILBOX
    tag = uuid.uuid4().hex[:6]
    paths = [("#private", f"bench{m}-{tag}@example.com", "INBOX", str(uuid.uuid1()), 42) for m in range(mailboxes)]
    spark.createDataFrame(paths, PATH_SCHEMA).write.format("org.apache.spark.sql.cassandra") \
        .options(keyspace=keyspace, table="mailboxpathv3").mode("append").save()
    ids = [p[3] for p in paths]

    def rows(bounds: tuple[int, int]) -> Any:
        when = datetime(2026, 1, 1, tzinfo=UTC)
        for i in range(*bounds):
            message, k = str(uuid.uuid1()), i % contents
            header_len, body_len = sizes[k]
            yield ("uid", (message, ids[i // PER_MAILBOX], i % PER_MAILBOX + 1, 1, False, False, False, i % 11 == 0,
                           False, i % 3 == 0, False, ["$label"] if i % 13 == 0 else [],
                           when + timedelta(seconds=i), when, message))
            yield ("content", (message, when + timedelta(seconds=i), header_len, body_len, header_len + body_len,
                               f"bench-b-{k}", f"bench-h-{k}"))

    chunk = 20_000
    generated = spark.sparkContext.parallelize([(s, min(n, s + chunk)) for s in range(0, n, chunk)]) \
        .flatMap(rows).cache()
    for kind, table, schema in (("uid", "imapuidtable", UID_SCHEMA), ("content", "messagev3", CONTENT_SCHEMA)):
        frame = spark.createDataFrame(generated.filter(lambda r, k=kind: r[0] == k).map(lambda r: r[1]), schema)
        frame.write.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table) \
            .mode("append").save()
    generated.unpersist()
    return time.perf_counter() - started


def reindex(spark: Any, settings: Any, bucket: str, read_alias: str, write_alias: str) -> tuple[dict, float]:
    """The job's report (plus ``detectSeconds``: both detections) and its duration."""
    from spark_apps.common.bookkeeping import ensure_tables
    from spark_apps.common.cql import CqlEndpoint
    from spark_apps.common.procedure import RunOptions
    from spark_apps.jobs.reindex_mailboxes import ReindexMailboxes, ReindexRunner

    class Timed(ReindexMailboxes):
        detect_seconds = 0.0

        def detect(self, spark: Any, settings: Any) -> Any:
            started = time.perf_counter()
            try:
                return super().detect(spark, settings)
            finally:
                Timed.detect_seconds += time.perf_counter() - started

    endpoint = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace)
    ensure_tables(endpoint.session())
    procedure = Timed()
    parser = argparse.ArgumentParser()
    procedure.add_arguments(parser)
    args = parser.parse_args(["--mode", "rebuildAll", "--blob-bucket", bucket, "--read-alias", read_alias,
                              "--write-alias", write_alias])
    running = procedure.configure(args)
    options = RunOptions(f"bench-{uuid.uuid4().hex[:8]}", False, None, 8, "bench", None, None, None, 10)
    started = time.perf_counter()
    report = ReindexRunner(procedure).run(spark, settings, endpoint, options, running)
    return {**report, "detectSeconds": Timed.detect_seconds}, time.perf_counter() - started


def raw_get(spark: Any, bucket: str, n: int, contents: int) -> tuple[int, float]:
    """Every message's two blobs fetched by the executors as the job fetches them (the same client, as many
    in flight), and nothing else done with them; (GETs, seconds)."""
    from spark_apps.common.mail_blobs import S3Access, read_object
    from spark_apps.common.reindex_pipeline import FETCH_THREADS

    access = S3Access.from_env(os.environ)
    parallel = spark.sparkContext.defaultParallelism

    def fetch(messages: Any) -> Any:
        from concurrent.futures import ThreadPoolExecutor

        reader = access.reader()

        def get(i: int) -> int:
            k = i % contents
            return len(read_object(reader, bucket, f"bench-h-{k}")) + len(read_object(reader, bucket, f"bench-b-{k}"))

        with ThreadPoolExecutor(FETCH_THREADS) as pool:
            yield sum(1 for _ in pool.map(get, messages))

    started = time.perf_counter()
    fetched = spark.sparkContext.parallelize(range(n), parallel).mapPartitions(fetch).sum()
    return 2 * fetched, time.perf_counter() - started


def raw_bulk(client: Any, source: str, target: str, threads: int) -> tuple[int, float]:
    from opensearchpy import helpers

    from spark_apps.common.reindex_pipeline import BATCH

    client.indices.refresh(index=source)
    documents = [(hit["_id"], hit["_source"]) for hit in helpers.scan(client, index=source, size=2000)]
    actions = ({"_index": target, "_id": doc_id, "routing": doc["mailboxId"], "_source": doc}
               for doc_id, doc in documents)
    started = time.perf_counter()
    ok = sum(1 for success, _ in helpers.parallel_bulk(client, actions, thread_count=threads, chunk_size=BATCH)
             if success)
    return ok, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-n", type=int, default=100_000)
    parser.add_argument("--contents", type=int, default=64, help="distinct MIME contents in S3")
    parser.add_argument("--driver-memory", default="2g")
    parser.add_argument("--record", action="store_true", help="append the result to docs/benchmarks.md")
    args = parser.parse_args()

    ep = Endpoints.from_env() or Endpoints.from_settings(StackSettings())
    settings_ = StackSettings()
    os.environ.setdefault("JAVA_HOME", settings_.java_home)
    os.environ["SPARK_CONNECTOR_JARS"] = ",".join(str(j) for j in artifacts.spark_jars(settings_))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ.update({"S3_ENDPOINT": ep.s3_endpoint, "S3_ACCESS_KEY": ep.s3_access_key,
                       "S3_SECRET_KEY": ep.s3_secret_key, "S3_REGION": ep.s3_region,
                       "OPENSEARCH_URL": ep.opensearch_url})

    from mailserver.search.config import SearchConfig
    from mailserver.search.index import ensure_index, make_client
    from mailserver.search.mapping import index_body
    from spark_apps.common.reindex_pipeline import BATCH, BULK_IN_FLIGHT, FETCH_THREADS
    from spark_apps.common.reports import s3_client
    from spark_apps.common.session import build_session
    from spark_apps.common.settings import JobSettings

    speed, load_before = host_speed(), os.getloadavg()[0]   # the machine as it is before the seeding
    tag = uuid.uuid4().hex[:8]
    config = CassandraConfig(hosts=tuple(ep.cassandra_hosts.split(",")), port=ep.cassandra_port,
                             keyspace=f"bench_reindex_{tag}")
    bootstrap = CassandraSession.connect(config, use_keyspace=False)
    create_schema(bootstrap.session, config)
    bootstrap.close()
    bucket, s3 = f"bench-reindex-{tag}", s3_client()
    s3.create_bucket(Bucket=bucket)
    client = make_client(SearchConfig(urls=(ep.opensearch_url,), timeout=180), max_retries=3)   # a shared, busy node
    index, read_alias, write_alias, ceiling = (f"bench_reindex_{tag}", f"bench_read_{tag}", f"bench_write_{tag}",
                                               f"bench_bulk_{tag}")
    ensure_index(client, index, index_body(1, 0), read_alias=read_alias, write_alias=write_alias)
    client.indices.create(index=ceiling, body=index_body(1, 0))
    settings = JobSettings("local[2]", ep.cassandra_hosts, ep.cassandra_port, config.keyspace, ep.s3_endpoint,
                           ep.opensearch_url)
    spark = build_session("bench-search-reindex", settings, {"spark.driver.memory": args.driver_memory})
    try:
        seed_s = seed(spark, config.keyspace, bucket, s3, args.n, args.contents)
        print(f"seeded {args.n} messages in {seed_s:.0f} s", flush=True)
        gets, get_s = raw_get(spark, bucket, args.n, args.contents)
        print(f"raw GET: {gets} objects in {get_s:.0f} s", flush=True)
        report, reindex_s = reindex(spark, settings, bucket, read_alias, write_alias)
        indexed = report["indexedMessageCount"]
        print(f"reindex: {indexed} documents in {reindex_s:.0f} s ({report['outcome']})", flush=True)
        bulk_threads = spark.sparkContext.defaultParallelism * BULK_IN_FLIGHT
        bulked, bulk_s = raw_bulk(client, read_alias, ceiling, bulk_threads)
        load = os.getloadavg()[0]
        job_rate, get_rate, bulk_rate = indexed / reindex_s, gets / 2 / get_s, bulked / bulk_s
        slower = min(get_rate, bulk_rate)
        james_s = args.n / JAMES_DEFAULT_RATE
        lines = [
            f"### Search reindex (rebuildAll) at {args.n:,} messages ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
            f"{platform.node() or 'host'}, {os.cpu_count()} cores, Spark local[2])",
            "",
            f"`bench/search_reindex.py -n {args.n} --contents {args.contents}`; {speed}; load average "
            f"{load_before:.1f} before the run, {load:.1f} at its end (the bench's own Spark, Cassandra, S3Proxy "
            "and OpenSearch share the cores: absolute figures move with the host and its load, the ratios are "
            f"measured within the run). JVM start-up excluded; seeding (Spark writes) took {seed_s:.0f} s.",
            "",
            "| | messages | seconds | messages/s | vs James's default |",
            "|---|---|---|---|---|",
            f"| reindex_mailboxes job, rebuildAll, no rate limit (detect, re-read Cassandra, GET S3, build, `_bulk`, "
            f"verify) | {indexed:,} ({report['outcome']}, {report['failedMessageCount']} failed) | {reindex_s:.0f} "
            f"| **{job_rate:,.0f}** | {job_rate / JAMES_DEFAULT_RATE:.1f}x |",
            f"| ceiling: raw S3 GET of the same blobs (2 a message, {FETCH_THREADS} in flight per partition) "
            f"| {gets // 2:,} | {get_s:.0f} | {get_rate:,.0f} | {get_rate / JAMES_DEFAULT_RATE:.1f}x |",
            f"| ceiling: raw `_bulk` of the same documents ({bulk_threads} requests in flight, {BATCH} a request) "
            f"| {bulked:,} | {bulk_s:.0f} | {bulk_rate:,.0f} | {bulk_rate / JAMES_DEFAULT_RATE:.1f}x |",
            f"| James's default `messagesPerSecond` | {args.n:,} | {james_s:,.0f} | 50 | 1x |",
            "",
            f"Reindex vs the slower ceiling ({'S3 GET' if get_rate <= bulk_rate else '_bulk'}): "
            f"**{job_rate / slower:.2f}** (vs S3 GET {job_rate / get_rate:.2f}, vs `_bulk` "
            f"{job_rate / bulk_rate:.2f}); reindex vs James's default: **{job_rate / JAMES_DEFAULT_RATE:.1f}x** "
            f"({reindex_s / 60:.1f} min instead of {james_s / 60:.0f} min). Of the job's {reindex_s:.0f} s, the two "
            f"detections took {report['detectSeconds']:.0f} s.",
            "",
        ]
        print("\n".join(lines))
        if args.record:
            with (ROOT / "docs" / "benchmarks.md").open("a") as out:
                out.write("\n" + "\n".join(lines))
        return 0
    finally:
        spark.stop()
        client.indices.delete(index=f"bench_*_{tag}", ignore_unavailable=True, expand_wildcards="all")
        session = CassandraSession.connect(config)
        session.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=120)
        session.close()
        objects = s3.list_objects_v2(Bucket=bucket).get("Contents", [])
        for obj in objects:
            s3.delete_object(Bucket=bucket, Key=obj["Key"])
        s3.delete_bucket(Bucket=bucket)


if __name__ == "__main__":
    sys.exit(main())
