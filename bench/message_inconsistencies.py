"""Message-inconsistency detection and repair at scale, next to its ceiling and James's baseline.

    .venv/bin/python bench/message_inconsistencies.py [--sizes 100000,1000000] [--record]
    .venv/bin/python bench/message_inconsistencies.py --sizes 1000000 --keyspace bench_1m --detect-only --repeat 2

For each size N (messages, 1,000 per mailbox), in a throw-away keyspace of the local stack:

1. generate N ``imapUidTable`` rows and their ``messageIdTable`` projection directly through
   the Spark Cassandra Connector, with ``--broken`` of them inconsistent (a third each: a
   missing projection row, an orphan projection row, an outdated flag);
2. **ceiling**: a raw connector scan of both tables reading the columns detection reads, into Spark's
   ``noop`` sink (every column materialised, nothing else); a ``count()`` of the same tables is shown
   too, but it is not the ceiling: Spark prunes the columns of a count, so it reads the keys only;
3. **detection**: the repair job's detection as a dry run (``ProcedureRunner.run``, in the same
   Spark session: JVM start-up is not counted, for any of the figures);
4. **repair**: the same job for real (fixes with SERIAL re-reads, checkpoints, verification);
5. **baseline**: a sequential per-message pass like James's task (for every messageIdTable
   row a point read of imapUidTable, then for every imapUidTable row a point read of
   messageIdTable; unthrottled), on the first ``--baseline-rows`` rows of each table; its
   time for N is extrapolated linearly, and said so.

Rows/s always counts the rows of both tables. Spark runs ``local[2]``.

Seeding 1,000,000 messages takes minutes: ``--keyspace NAME`` seeds that keyspace only if it does not
exist yet and keeps it, so later runs measure the same rows (one size per keyspace). Repair changes
the rows, so reuse goes with ``--detect-only`` (the ceiling and the dry run; no repair, no baseline).
``--repeat K`` measures the ceiling and the detection K times each, alternately, in the same session.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cassandra.query import SimpleStatement

from include.stack import artifacts
from include.stack.endpoints import Endpoints
from include.stack.settings import StackSettings
from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.schema import create_schema
from mailserver.cassandra.session import CassandraSession
from spark_apps.common.bookkeeping import ensure_tables
from spark_apps.common.cassandra_tables import read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import ProcedureRunner, RunOptions
from spark_apps.common.session import build_session
from spark_apps.common.settings import JobSettings
from spark_apps.jobs.solve_message_inconsistencies import COMPARED_COLUMNS, SolveMessageInconsistencies

PER_MAILBOX = 1000
SCHEMA = ("mailboxid string, uid long, messageid string, threadid string, modseq long, flaganswered boolean, "
          "flagdeleted boolean, flagdraft boolean, flagflagged boolean, flagrecent boolean, flagseen boolean, "
          "flaguser boolean, userflags array<string>, internaldate timestamp, save_date timestamp, "
          "bodystartoctet int, fullcontentoctets long, headercontent string")
FIELDS = [f.split()[0] for f in SCHEMA.split(", ")]
COLUMNS = ["mailboxid", "uid", *COMPARED_COLUMNS]


def generate_rows(partition: int, start: int, end: int, broken_every: int) -> Any:
    """Rows of both tables for messages [start, end); every ``broken_every``-th message is broken."""
    when = datetime(2026, 1, 1, tzinfo=UTC)
    mailboxes: dict[int, str] = {}
    for i in range(start, end):
        mailbox = mailboxes.setdefault(i // PER_MAILBOX, str(uuid.uuid1()))
        message = str(uuid.uuid1())
        truth = {"mailboxid": mailbox, "uid": i % PER_MAILBOX + 1, "messageid": message, "threadid": message,
                 "modseq": 1, "flaganswered": False, "flagdeleted": False, "flagdraft": False,
                 "flagflagged": False, "flagrecent": False, "flagseen": i % 3 == 0, "flaguser": False,
                 "userflags": [], "internaldate": when + timedelta(seconds=i), "save_date": when,
                 "bodystartoctet": 300, "fullcontentoctets": 2000 + i % 1000, "headercontent": f"h-{message}"}
        kind = (i // broken_every) % 3 if i % broken_every == 0 else None
        yield ("truth", truth)
        if kind == 0:      # projection write lost
            continue
        projection = dict(truth)
        if kind == 1:      # truth delete lost its projection delete: an orphan next to a consistent row
            yield ("projection", {**truth, "uid": truth["uid"] + PER_MAILBOX * 10, "messageid": str(uuid.uuid1())})
        if kind == 2:      # flag update lost on the projection
            projection["flagseen"] = not truth["flagseen"]
        yield ("projection", projection)


def seed(spark: Any, keyspace: str, n: int, broken: float) -> float:
    broken_every = max(1, round(1 / broken))
    chunk = PER_MAILBOX * 20
    bounds = [(p, s, min(n, s + chunk)) for p, s in enumerate(range(0, n, chunk))]
    rows = (spark.sparkContext.parallelize(bounds, len(bounds))
            .flatMap(lambda b: generate_rows(b[0], b[1], b[2], broken_every)).cache())
    started = time.perf_counter()
    for side, table in (("truth", "imapuidtable"), ("projection", "messageidtable")):
        values = rows.filter(lambda r, s=side: r[0] == s).map(lambda r: tuple(r[1][f] for f in FIELDS))
        df = spark.createDataFrame(values, SCHEMA)
        (df.write.format("org.apache.spark.sql.cassandra").options(keyspace=keyspace, table=table)
         .mode("append").save())
    rows.unpersist()
    return time.perf_counter() - started


def raw_scan(spark: Any, settings: JobSettings) -> tuple[int, float, float]:
    """(rows, seconds of the scan of the compared columns, seconds of a count of the same tables)."""
    tables = ("imapuidtable", "messageidtable")
    started = time.perf_counter()
    for table in tables:
        read_table(spark, settings, table, COLUMNS).write.format("noop").mode("overwrite").save()
    scan_s = time.perf_counter() - started
    started = time.perf_counter()
    total = sum(read_table(spark, settings, t, COLUMNS).count() for t in tables)
    return total, scan_s, time.perf_counter() - started


def procedure_run(spark: Any, settings: JobSettings, dry_run: bool) -> tuple[dict[str, Any], float]:
    endpoint = CqlEndpoint(settings.cassandra_hosts, settings.cassandra_port, settings.keyspace)
    ensure_tables(endpoint.session())
    procedure = SolveMessageInconsistencies()
    parser = argparse.ArgumentParser()
    procedure.add_arguments(parser)
    args = parser.parse_args([])
    args.rate = None
    running = procedure.configure(args)
    options = RunOptions(f"bench-{uuid.uuid4().hex[:8]}", dry_run, None, 8, "bench", None, None, None, 100)
    started = time.perf_counter()
    report = ProcedureRunner(procedure).run(spark, settings, endpoint, options, running)
    return report, time.perf_counter() - started


def baseline(session: CassandraSession, limit: int) -> tuple[int, float]:
    """James's shape: a paged scan of each table and one point read per row, one row at a time."""
    by_message = session.session.prepare("SELECT uid FROM imapUidTable WHERE messageId = ? AND mailboxId = ?")
    by_uid = session.session.prepare("SELECT messageId FROM messageIdTable WHERE mailboxId = ? AND uid = ?")
    rows = 0
    started = time.perf_counter()
    scans = (("SELECT mailboxId, uid, messageId FROM messageIdTable", by_message, ("messageid", "mailboxid")),
             ("SELECT messageId, mailboxId, uid FROM imapUidTable", by_uid, ("mailboxid", "uid")))
    for cql, point, keys in scans:
        for done, row in enumerate(session.session.execute(SimpleStatement(cql, fetch_size=1000))):
            if done >= limit:
                break
            session.session.execute(point, tuple(row[k] for k in keys))
            rows += 1
    return rows, time.perf_counter() - started


def keyspace_exists(session: CassandraSession, keyspace: str) -> bool:
    rows = session.session.execute("SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = %s",
                                   (keyspace,))
    return rows.one() is not None


def bench_size(n: int, args: argparse.Namespace, ep: Endpoints) -> list[dict[str, Any]]:
    """One result per repetition (``--repeat``) of the scan and the dry run; the repair and the baseline
    run once, in the first."""
    keyspace = args.keyspace or f"bench_maint_{uuid.uuid4().hex[:8]}"
    config = CassandraConfig(hosts=tuple(ep.cassandra_hosts.split(",")), port=ep.cassandra_port, keyspace=keyspace)
    bootstrap = CassandraSession.connect(config, use_keyspace=False)
    reused = args.keyspace is not None and keyspace_exists(bootstrap, keyspace)
    if not reused:
        create_schema(bootstrap.session, config)
    bootstrap.close()
    session = CassandraSession.connect(config)
    settings = JobSettings("local[2]", ep.cassandra_hosts, ep.cassandra_port, config.keyspace, ep.s3_endpoint, None)
    spark = build_session("bench-message-inconsistencies", settings, {"spark.driver.memory": args.driver_memory})
    try:
        seed_s = None if reused else seed(spark, config.keyspace, n, args.broken)
        results = []
        for _ in range(args.repeat):
            rows, scan_s, count_s = raw_scan(spark, settings)
            detection, detect_s = procedure_run(spark, settings, dry_run=True)
            results.append({"n": n, "rows": rows, "seed_s": seed_s, "scan_s": scan_s, "count_s": count_s,
                            "detect_s": detect_s, "detected": sum(detection["detected"].values()),
                            "kinds": detection["detected"], "repair_s": None, "base_s": None})
        if not args.detect_only:
            repair, repair_s = procedure_run(spark, settings, dry_run=False)
            base_rows, base_s = baseline(session, args.baseline_rows)
            results[0].update(
                repair_s=repair_s, outcome=repair["outcome"], remaining=sum(repair["remaining"].values()),
                fixed=sum(v for k, v in repair.items() if k.endswith("MessageIdEntries") and
                          k.startswith(("added", "updated", "removed"))),
                base_rows=base_rows, base_s=base_s)
        return results
    finally:
        spark.stop()
        if args.keyspace is None:
            session.session.execute(f"DROP KEYSPACE IF EXISTS {config.keyspace}", timeout=300)
        session.close()


def render(results: list[dict[str, Any]], args: argparse.Namespace) -> list[str]:
    load = os.getloadavg()
    lines = [f"### Message inconsistencies at scale ({datetime.now(UTC):%Y-%m-%d}, {platform.node() or 'host'}, "
             f"{os.cpu_count()} cores, Spark local[2])", "",
             f"`bench/message_inconsistencies.py --sizes {args.sizes} --broken {args.broken} "
             f"--baseline-rows {args.baseline_rows}{' --detect-only' if args.detect_only else ''}"
             f"{f' --repeat {args.repeat}' if args.repeat > 1 else ''}`; load average at the end {load[0]:.1f}. "
             "Rows/s count the rows of both tables; JVM start-up is excluded everywhere.", "",
             "| messages | rows (both tables) | raw scan rows/s (ceiling) | key-only count rows/s | detection rows/s "
             "| repair run rows/s "
             "| fixed / detected | James-like pass rows/s (baseline) | detection vs ceiling | detection vs baseline "
             "| baseline for N (extrapolated) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        scan, detect = r["rows"] / r["scan_s"], r["rows"] / r["detect_s"]
        if r["repair_s"] is None:
            repair = base = vs_base = extrapolated = "-"
            fixed = f"- / {r['detected']:,}"
        else:
            base_rate = r["base_rows"] / r["base_s"]
            repair = f"{r['rows'] / r['repair_s']:,.0f}"
            fixed = f"{r['fixed']:,} / {r['detected']:,} ({r['outcome']}, {r['remaining']} left)"
            base, vs_base = f"{base_rate:,.0f}", f"{detect / base_rate:.1f}x"
            extrapolated = f"{r['rows'] / base_rate / 60:,.1f} min"
        lines.append(f"| {r['n']:,} | {r['rows']:,} | {scan:,.0f} | {r['rows'] / r['count_s']:,.0f} | {detect:,.0f} "
                     f"| {repair} | {fixed} | {base} | {detect / scan:.2f} | {vs_base} | {extrapolated} |")
    sizes = sorted({r["n"] for r in results})
    if len(sizes) > 1:
        def best(n: int, key: str) -> float:   # the fastest repetition: the least disturbed by the load
            return min(r[key] for r in results if r["n"] == n and r[key] is not None)

        a, b = sizes[0], sizes[-1]
        line = (f"From {a:,} to {b:,} messages (x{b / a:g}): "
                f"raw scan time x{best(b, 'scan_s') / best(a, 'scan_s'):.1f}, "
                f"detection x{best(b, 'detect_s') / best(a, 'detect_s'):.1f}")
        if not args.detect_only:
            line += f", repair run x{best(b, 'repair_s') / best(a, 'repair_s'):.1f}"
        seeds = [r["seed_s"] for r in results if r["seed_s"] is not None]
        lines += ["", line + (f" (seeding took {', '.join(f'{s:.0f} s' for s in seeds)})." if seeds else ".")]
    return [*lines, ""]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="comma-separated message counts")
    parser.add_argument("--broken", type=float, default=0.001, help="fraction of messages made inconsistent")
    parser.add_argument("--baseline-rows", type=int, default=20_000, help="rows per table of the baseline pass")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--record", action="store_true", help="append the figures to docs/benchmarks.md")
    parser.add_argument("--keyspace", help="seed this keyspace only if it does not exist, and keep it (one size)")
    parser.add_argument("--detect-only", action="store_true", help="ceiling and dry run only: no repair, no baseline")
    parser.add_argument("--repeat", type=int, default=1, help="measure the ceiling and the dry run this many times")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.keyspace and len(sizes) != 1:
        parser.error("--keyspace holds one size: give one --sizes")

    settings = StackSettings()
    os.environ.setdefault("JAVA_HOME", settings.java_home)
    # The Python workers Spark starts for the repairs import spark_apps too.
    repo = str(Path(__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    os.environ["SPARK_CONNECTOR_JARS"] = ",".join(str(j) for j in artifacts.spark_jars(settings))
    ep = Endpoints.from_env() or Endpoints.from_settings(settings)
    os.environ.update(ep.to_env())
    results = []
    for n in sizes:
        print(f"size {n:,}...", flush=True)
        for result in bench_size(n, args, ep):
            results.append(result)
            print(result, flush=True)
    lines = render(results, args)
    print("\n".join(lines))
    if args.record:
        with (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").open("a") as out:
            out.write("\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
