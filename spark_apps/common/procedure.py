"""The anatomy every maintenance job shares: detect -> (dry run stops) -> repair -> verify.

A procedure says what is inconsistent (``detect``: a DataFrame of small items, one per thing
to fix, with a ``kind`` column) and how to fix one item (``repair``: runs on executors, re-reads
the rows from Cassandra before writing, since the Spark snapshot is stale by definition). This
module does the rest, the same way for every procedure:

* items are spread over ``--slices`` slices by a hash of the procedure's key columns; each
  repaired slice is checkpointed (``maintenance_checkpoints``) with its outcomes, so a killed
  run started again with the same ``--run-key`` skips the slices already done and still
  reports them;
* repair writes are throttled to ``--rate`` items/s across the whole job;
* a procedure whose ``repair`` is safe to call from several threads may set ``concurrency``: each
  partition then keeps up to that many items in flight (a small thread pool fed as items finish,
  the partition never read ahead further), instead of one synchronous item at a time;
* after the repair, detection runs again: items still there that this run tried to fix are
  *unresolved* (the run is PARTIAL); items that appeared since are *new* (reported, not
  failed: the procedures that run online can see fresh inconsistencies from live traffic);
* the run's envelope is every job's (``job_run.py``): the JSON report goes to S3 and to stdout;
  ``maintenance_audit`` gets a row at the start and at the end. Exit status: 0 COMPLETED (or dry
  run), 1 PARTIAL, 2 bad arguments.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from spark_apps.common.bookkeeping import Checkpoints, SliceResult
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.job_run import COMPLETED, DRY_RUN, PARTIAL, RunOptions, job_parser, run_job
from spark_apps.common.progress import Progress
from spark_apps.common.settings import JobSettings
from spark_apps.common.throttle import RateLimiter, share

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger("mailplatform.procedure")

FIXED, SKIPPED, FAILED = "fixed", "skipped", "failed"


@dataclass(frozen=True)
class Outcome:
    """What repairing one item did. ``counter`` names the report field a fix (or a skip) increments."""

    status: str
    item: dict[str, Any]
    counter: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Detection:
    items: DataFrame                 # columns: kind + the procedure's item columns
    processed: dict[str, int]        # James's "processed..." counters of the scan


class Procedure(ABC):
    """One maintenance procedure. Instances are pickled to executors: keep them plain data."""

    job: str                 # James's task type, e.g. "solve-message-inconsistencies"
    slice_columns: tuple[str, ...]
    # Items of one partition repaired at once (threads of the executor's Python worker). 1: one after
    # the other in the task's own thread. More only when ``repair`` is thread-safe (shared CQL session
    # and S3 client: both are; per-call state only).
    concurrency: int = 1

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:  # noqa: B027 (optional hook)
        """Procedure-specific options (scope, modes)."""

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        """Validate the options; return them as the report's ``runningOptions``."""
        return {}

    @abstractmethod
    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection: ...

    @abstractmethod
    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome: ...

    def report_fields(self, detection: Detection, result: SliceResult) -> dict[str, Any]:
        """James's additionalInformation fields for this procedure."""
        return {**detection.processed, **result.counters}

    # Steps of the whole run around detect -> repair -> verify, on the driver: a procedure with a step of
    # its own (a mailbox to create first, a state to move last) says it here, not in a runner of its own.

    def before_run(self, dry_run: bool) -> None:  # noqa: B027 (optional hook)
        """Before the detection."""

    def after_run(self, report: dict[str, Any], endpoint: CqlEndpoint, dry_run: bool) -> dict[str, Any]:
        """The report once verified: a step after the repair, an outcome of the procedure's own."""
        return report

    def fixed(self, item: dict[str, Any]) -> None:  # noqa: B027 (optional hook)
        """Every item a slice fixed, sampled or not: for a procedure that must know everything the run did
        (to tell it apart in its verification)."""


def _with_slice(items: DataFrame, columns: Sequence[str], slices: int) -> DataFrame:
    from pyspark.sql import functions as F

    return items.withColumn("slice", F.pmod(F.xxhash64(*columns), F.lit(slices)).cast("int"))


def _repair_one(procedure: Procedure, endpoint: CqlEndpoint, item: dict[str, Any]) -> dict[str, Any]:
    try:
        outcome = procedure.repair(endpoint, item)
    except Exception as exc:  # one bad item must not stop the slice: it is reported and replayable
        outcome = Outcome(FAILED, item, error=f"{type(exc).__name__}: {exc}")
    return {"status": outcome.status, "item": outcome.item, "counter": outcome.counter, "error": outcome.error}


def _repair_partition(procedure: Procedure, endpoint: CqlEndpoint, rate: float | None,
                      rows: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """The outcome of every row of the partition: one at a time, or ``procedure.concurrency`` in flight.

    Each repair starts once the partition's limiter allows it (the limiter is taken here, in the
    task's thread, before the item is handed to a thread), so ``rate`` holds whatever the
    concurrency. With concurrency, outcomes come in the order repairs finish, and the next row is
    read only when a slot is free: at most ``concurrency`` items of the partition are held.
    """
    limiter = RateLimiter(rate)
    items = ({k: v for k, v in row.asDict(recursive=True).items() if k != "slice"} for row in rows)
    concurrency = max(1, int(getattr(procedure, "concurrency", 1) or 1))
    if concurrency == 1:
        for item in items:
            limiter.acquire()
            yield _repair_one(procedure, endpoint, item)
        return
    pool = ThreadPoolExecutor(concurrency, thread_name_prefix=f"repair-{procedure.job}")
    in_flight: set[Future[dict[str, Any]]] = set()
    exhausted = False
    try:
        while in_flight or not exhausted:
            while not exhausted and len(in_flight) < concurrency:   # a free slot: read one more row
                pending = next(items, None)
                if pending is None:
                    exhausted = True
                else:
                    limiter.acquire()
                    in_flight.add(pool.submit(_repair_one, procedure, endpoint, pending))
            if in_flight:
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
    finally:   # also when the task is cancelled: nothing queued is started, what runs is waited for
        pool.shutdown(wait=True, cancel_futures=True)


def _merge(into: SliceResult, other: SliceResult, sample_size: int) -> None:
    for k, v in other.counters.items():
        into.counters[k] = into.counters.get(k, 0) + v
    into.fixed.extend(other.fixed[: max(0, sample_size - len(into.fixed))])
    into.failures.extend(other.failures)


class ProcedureRunner:
    def __init__(self, procedure: Procedure) -> None:
        self.procedure = procedure

    def parse(self, argv: Sequence[str] | None) -> tuple[argparse.Namespace, JobSettings, RunOptions, dict]:
        parser = job_parser(self.procedure.job, type(self.procedure).__doc__)
        self.procedure.add_arguments(parser)
        args = parser.parse_args(argv)
        try:
            options = RunOptions.from_args(args)
            running_options = self.procedure.configure(args)
        except ValueError as exc:
            parser.error(str(exc))
        return args, JobSettings.from_args(args), options, running_options

    def main(self, argv: Sequence[str] | None = None) -> int:
        _, settings, options, running_options = self.parse(argv)
        audited = {**running_options, "dryRun": options.dry_run, "rate": options.rate, "slices": options.slices}
        return run_job(self.procedure.job, settings, options, audited,
                       lambda spark, endpoint: self._whole_run(spark, settings, endpoint, options, running_options))

    def _whole_run(self, spark: SparkSession, settings: JobSettings, endpoint: CqlEndpoint, options: RunOptions,
                   running_options: dict[str, Any]) -> dict[str, Any]:
        self.procedure.before_run(options.dry_run)
        report = self.run(spark, settings, endpoint, options, running_options)
        return self.procedure.after_run(report, endpoint, options.dry_run)

    def run(self, spark: SparkSession, settings: JobSettings, endpoint: CqlEndpoint, options: RunOptions,
            running_options: dict[str, Any]) -> dict[str, Any]:
        from pyspark.sql import functions as F

        procedure = self.procedure
        started = time.monotonic()
        detection = procedure.detect(spark, settings)
        items = _with_slice(detection.items, procedure.slice_columns, options.slices).cache()
        # One pass counts both ways: by kind for the report, by slice so that an empty slice costs no
        # Spark job (a verify pass, or a scoped run, leaves most slices empty).
        by_slice_and_kind = items.groupBy("slice", "kind").count().collect()
        detected: dict[str, int] = {}
        per_slice: Counter[int] = Counter()
        for row in by_slice_and_kind:
            detected[row["kind"]] = detected.get(row["kind"], 0) + row["count"]
            per_slice[row["slice"]] += row["count"]
        base = {"type": procedure.job, "timestamp": datetime.now(UTC).isoformat(), "runKey": options.run_key,
                "dryRun": options.dry_run, "runningOptions": running_options, "detected": detected}
        if options.dry_run:
            sample = [r.asDict(recursive=True) for r in items.drop("slice").limit(options.sample_size).collect()]
            items.unpersist()
            return {**base, **procedure.report_fields(detection, SliceResult()), "outcome": DRY_RUN,
                    "detectedItems": sample, "durationSeconds": round(time.monotonic() - started, 3)}

        checkpoints = Checkpoints(endpoint.session(), procedure.job, options.run_key)
        already = checkpoints.done()
        total = SliceResult()
        repaired: list[int] = []
        parallel = max(1, spark.sparkContext.defaultParallelism)
        progress = Progress(options.slices - len(already), sum(detected.values()))
        log.info("detected %s; repairing %d slice(s)%s", detected or "nothing", progress.slices,
                 f" ({len(already)} already done by an earlier attempt)" if already else "")
        for slice_ in range(options.slices):
            if slice_ in already:
                _merge(total, already[slice_], options.sample_size)
                continue
            result = (self._repair_slice(items.filter(F.col("slice") == slice_), endpoint, options, parallel)
                      if per_slice[slice_] else SliceResult())
            if not result.failures:   # a slice with failures is redone by the next attempt
                checkpoints.mark_done(slice_, result)
            _merge(total, result, options.sample_size)
            repaired.append(slice_)
            log.info("%s; slice %d: %s", progress.slice_done(result.items()), slice_ + 1, result.counters)

        remaining_items = _with_slice(procedure.detect(spark, settings).items, procedure.slice_columns,
                                      options.slices).cache()
        remaining = {r["kind"]: r["count"] for r in remaining_items.groupBy("kind").count().collect()}
        keys = [c for c in remaining_items.columns if c != "slice"]
        tried = items.filter(F.col("slice").isin(repaired)).select(*keys) if repaired else None
        unresolved_rows = (remaining_items.join(tried, keys, "left_semi").drop("slice")
                           .limit(options.sample_size).collect()) if tried is not None else []
        unresolved = remaining_items.join(tried, keys, "left_semi").count() if tried is not None else 0
        new_since = sum(remaining.values()) - unresolved
        items.unpersist()
        remaining_items.unpersist()
        outcome = COMPLETED if not total.failures and unresolved == 0 else PARTIAL
        return {**base, **procedure.report_fields(detection, total),
                "fixedInconsistencies": total.fixed, "errors": total.failures,
                "remaining": remaining, "unresolved": unresolved,
                "unresolvedItems": [r.asDict(recursive=True) for r in unresolved_rows],
                "newSinceDetection": new_since,
                "slices": {"total": options.slices, "repaired": repaired,
                           "skippedAlreadyDone": sorted(already)},
                "outcome": outcome, "durationSeconds": round(time.monotonic() - started, 3)}

    def _repair_slice(self, slice_items: DataFrame, endpoint: CqlEndpoint, options: RunOptions,
                      parallel: int) -> SliceResult:
        procedure = self.procedure
        rate = share(options.rate, parallel)
        outcomes = (slice_items.repartition(parallel).rdd
                    .mapPartitions(lambda rows: _repair_partition(procedure, endpoint, rate, rows))
                    .collect())
        result = SliceResult()
        counters: Counter[str] = Counter()
        for o in outcomes:
            if o["status"] == FIXED:
                if o["counter"]:
                    counters[o["counter"]] += 1
                procedure.fixed(o["item"])
                if len(result.fixed) < options.sample_size:
                    result.fixed.append(o["item"])
            elif o["status"] == FAILED:
                result.failures.append({**o["item"], "error": o["error"]})
            else:   # a skip may say why (its counter); by default the item was resolved meanwhile
                counters[o["counter"] or "skippedResolvedMeanwhile"] += 1
        result.counters = dict(counters)
        return result


def run_procedure(procedure: Procedure, argv: Sequence[str] | None = None) -> int:
    return ProcedureRunner(procedure).main(argv if argv is not None else sys.argv[1:])
