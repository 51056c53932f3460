"""Solve mailbox inconsistencies: ``mailboxPathV3`` is the truth, ``mailbox`` its projection.

James's ``solve-mailbox-inconsistencies`` (HEAD algorithm, reference §2.1) with one Spark join
instead of two row-by-row scans. Both tables are read through the connector; per mailbox id
the detection sees the row (if any), every path entry pointing to the id, and who holds the
row's path. One item per id, so two fixes never race on the same mailbox:

* ``orphanMailboxDAOEntry``: a row, no path entry points to its id and its path is free ->
  insert the path from the row (IF NOT EXISTS, with uidvalidity); not applied = error;
* ``orphanMailboxPathDAOEntry``: path entries, no row -> re-create the row from the entry
  (the newest one by ``WRITETIME(mailboxId)`` when a crash left several);
* ``sameIdConflict``: path entries point to the id but not exactly at the row's path (a
  rename that did not finish, or a stale row) -> the newest entry wins, the row's own path
  on a tie; the row is rewritten to the winner (keeping its uidvalidity) and the losing
  entries are deleted (``IF mailboxId = id``). A row whose path is absent or taken while
  entries point to its id is stale, not orphan: the truth says where the mailbox is;
* ``conflictingEntry`` (the ghost mailbox): a row M at path P, P registered to another id W,
  nothing points to M -> never fixed here (James's autoMerge, §2.9, is not implemented):
  listed in ``conflictingEntries`` in James's shape and the outcome is PARTIAL.

Every fix re-reads the row and the path entries at SERIAL first and does nothing when the
inconsistency is gone. The procedure is not safe with traffic on (ADR 0020): the DAG runs it
in maintenance mode. ``--max-iterations`` repeats the whole pass (detect, repair, verify)
while a pass fixed something and something is left, as James does.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import as_uuid, read_table
from spark_apps.common.cql import CqlEndpoint, CqlSession
from spark_apps.common.procedure import (
    DRY_RUN,
    FAILED,
    FIXED,
    PARTIAL,
    SKIPPED,
    Detection,
    Outcome,
    Procedure,
    ProcedureRunner,
    RunOptions,
)
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

ORPHAN_MAILBOX = "orphanMailboxDAOEntry"
ORPHAN_PATH = "orphanMailboxPathDAOEntry"
SAME_ID_CONFLICT = "sameIdConflict"
GHOST_CONFLICT = "conflictingEntry"
# Every column non-null: the framework matches items before and after repair by equality.
ITEM_COLUMNS = ("kind", "mailboxid", "namespace", "user", "mailboxname", "paths", "conflictmailboxid")

SELECT_ROW = "SELECT id, mailboxbase, name, uidvalidity FROM mailbox WHERE id = ?"
SELECT_PATH = ("SELECT mailboxid, uidvalidity, WRITETIME(mailboxid) AS written FROM mailboxpathv3 "
               "WHERE namespace = ? AND user = ? AND mailboxname = ?")
INSERT_PATH = ("INSERT INTO mailboxpathv3 (namespace, user, mailboxname, mailboxid, uidvalidity) "
               "VALUES (?, ?, ?, ?, ?) IF NOT EXISTS")
DELETE_PATH = "DELETE FROM mailboxpathv3 WHERE namespace = ? AND user = ? AND mailboxname = ? IF mailboxid = ?"
INSERT_ROW = "INSERT INTO mailbox (id, mailboxbase, name, uidvalidity) VALUES (?, ?, ?, ?)"


# ---------------------------------------------------------------------------------- paths
def path_string(namespace: str, user: str, name: str) -> str:
    """James's ``MailboxPath.asString()`` form used in reports: ``namespace:user:name``."""
    return f"{namespace}:{user}:{name}"


def parse_path(value: str) -> tuple[str, str, str]:
    namespace, user, name = value.split(":", 2)   # only the name may contain ':'
    return namespace, user, name


def _path_column(namespace: str, user: str, name: str) -> Column:
    from pyspark.sql import functions as F

    return F.concat_ws(":", F.col(namespace), F.col(user), F.col(name))


# ------------------------------------------------------------------------------ detection
def mailbox_inconsistencies(mailbox: DataFrame, paths: DataFrame) -> DataFrame:
    """Pure: one item per inconsistent mailbox id, columns ``ITEM_COLUMNS``.

    ``mailbox``: id, mailboxbase struct<namespace, user>, name (as the connector reads it);
    ``paths``: namespace, user, mailboxname, mailboxid.
    """
    from pyspark.sql import functions as F

    rows = mailbox.select(F.col("id").alias("mailboxid"), F.col("mailboxbase.namespace").alias("namespace"),
                          F.col("mailboxbase.user").alias("user"), F.col("name").alias("mailboxname"))
    entries = paths.select("namespace", "user", "mailboxname", "mailboxid")
    by_id = entries.groupBy("mailboxid").agg(
        F.array_sort(F.collect_list(_path_column("namespace", "user", "mailboxname"))).alias("paths"))
    holders = entries.select("namespace", "user", "mailboxname", F.col("mailboxid").alias("holder"))
    seen = rows.join(by_id, "mailboxid", "left").join(holders, ["namespace", "user", "mailboxname"], "left")
    row_path = _path_column("namespace", "user", "mailboxname")
    kind = (F.when(F.col("paths").isNull() & F.col("holder").isNull(), F.lit(ORPHAN_MAILBOX))
            .when(F.col("paths").isNull(), F.lit(GHOST_CONFLICT))
            .when((F.size("paths") == 1) & (F.col("paths")[0] == row_path), F.lit(None))
            .otherwise(F.lit(SAME_ID_CONFLICT)))
    no_paths = F.array().cast("array<string>")
    from_rows = (seen.withColumn("kind", kind).filter(F.col("kind").isNotNull())
                 .select("kind", "mailboxid",
                         *(F.coalesce(F.col(c), F.lit("")).alias(c) for c in ("namespace", "user", "mailboxname")),
                         F.coalesce(F.col("paths"), no_paths).alias("paths"),
                         F.when(F.col("kind") == GHOST_CONFLICT, F.col("holder")).otherwise(F.lit(""))
                         .alias("conflictmailboxid")))
    from_paths = (by_id.join(rows.select("mailboxid"), "mailboxid", "left_anti")
                  .select(F.lit(ORPHAN_PATH).alias("kind"), "mailboxid", F.lit("").alias("namespace"),
                          F.lit("").alias("user"), F.lit("").alias("mailboxname"), "paths",
                          F.lit("").alias("conflictmailboxid")))
    return from_rows.unionByName(from_paths).select(*ITEM_COLUMNS)


def winning_path(row_path: str | None, registered: dict[str, int]) -> str:
    """The path an id keeps: the newest entry by write time; on a tie the row's own path (§2.1)."""
    newest = max(registered.values())
    tied = sorted(p for p, written in registered.items() if written == newest)
    return row_path if row_path in tied else tied[0]


def conflicting_entry(item: dict[str, Any]) -> dict[str, Any]:
    """James's ``conflictingEntries`` element for a ghost item."""
    path = path_string(item["namespace"], item["user"], item["mailboxname"])
    return {"mailboxDaoEntry": {"mailboxPath": path, "mailboxId": str(item["mailboxid"])},
            "mailboxPathDaoEntry": {"mailboxPath": path, "mailboxId": str(item["conflictmailboxid"])}}


def combine_passes(passes: list[dict[str, Any]]) -> dict[str, Any]:
    """One report for several passes, as James combines iterations: counters and lists accumulate."""
    first, last = passes[0], passes[-1]
    if len(passes) == 1:
        return {**first, "iterations": 1}
    combined = {**last, "timestamp": first["timestamp"], "runKey": first["runKey"], "detected": first["detected"]}
    for key in ("processedMailboxEntries", "processedMailboxPathEntries", "skippedResolvedMeanwhile",
                "durationSeconds"):
        combined[key] = sum(p.get(key, 0) for p in passes)
    for key in ("fixedInconsistencies", "errors", "conflictingEntries"):
        combined[key] = [x for p in passes for x in p.get(key, [])]
    if any(p.get("errors") for p in passes):   # PARTIAL wins, as James's Task.combine
        combined["outcome"] = PARTIAL
    combined["iterations"] = len(passes)
    combined["passes"] = [{"runKey": p["runKey"], "detected": p["detected"], "remaining": p.get("remaining"),
                           "fixed": len(p.get("fixedInconsistencies", [])), "errors": len(p.get("errors", [])),
                           "outcome": p["outcome"]} for p in passes]
    return combined


# -------------------------------------------------------------------------------- repairs
def _registered(cql: CqlSession, mailbox_id: Any, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The given path entries that still point to ``mailbox_id``, read at SERIAL, with their write time."""
    found = {}
    for path in dict.fromkeys(p for p in paths if p):
        rows = cql.serial_read(SELECT_PATH, parse_path(path))
        if rows and rows[0]["mailboxid"] == mailbox_id:
            found[path] = rows[0]
    return found


def _row_path(row: dict[str, Any]) -> str:
    base = row.get("mailboxbase")
    if base is None or row.get("name") is None:
        raise ValueError(f"mailbox row {row['id']} has no path (null mailboxbase or name)")
    return path_string(base.namespace, base.user, row["name"])


def _write_row(cql: CqlSession, mailbox_id: Any, path: str, uid_validity: int | None) -> None:
    namespace, user, name = parse_path(path)
    if uid_validity is None:   # as James sanitises a missing one: a fresh value makes clients resync
        uid_validity = random.randint(1, 2**31 - 1)  # noqa: S311 - not a secret
    cql.execute(INSERT_ROW, (mailbox_id, (namespace, user), name, uid_validity))


def _drop_losers(cql: CqlSession, mailbox_id: Any, registered: dict[str, Any], winner: str) -> None:
    for path in registered:
        if path != winner:
            cql.lwt(DELETE_PATH, (*parse_path(path), mailbox_id))


class SolveMailboxInconsistencies(Procedure):
    job = "solve-mailbox-inconsistencies"
    slice_columns = ("mailboxid",)

    def __init__(self) -> None:
        self.max_iterations = 1
        self.dry_run = False

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--max-iterations", type=int, default=1,
                            help="repeat the pass while it fixed something, at most this many times (default 1)")
        parser.add_argument("--auto-merge", action="store_true",
                            help="not supported: ghost mailboxes are reported, never merged")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        if args.max_iterations < 1:
            raise ValueError("--max-iterations must be at least 1")
        if args.auto_merge:
            raise ValueError("--auto-merge is not supported: ghost mailboxes (conflictingEntries) are reported "
                             "for an administrator to merge, see the DAG documentation")
        self.max_iterations, self.dry_run = args.max_iterations, args.dry_run
        return {"maxIterations": self.max_iterations, "autoMerge": False}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        mailbox = read_table(spark, settings, "mailbox", ["id", "mailboxbase", "name"]).cache()
        paths = read_table(spark, settings, "mailboxpathv3", ["namespace", "user", "mailboxname", "mailboxid"]).cache()
        processed = {"processedMailboxEntries": mailbox.count(), "processedMailboxPathEntries": paths.count()}
        return Detection(mailbox_inconsistencies(mailbox, paths), processed)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        from pyspark.sql import functions as F

        if self.dry_run:   # what a run would report; a real run lists those it confirmed at SERIAL
            ghosts = [r.asDict(recursive=True) for r in
                      detection.items.filter(F.col("kind") == GHOST_CONFLICT).collect()]
        else:
            ghosts = [f for f in result.failures if f.get("kind") == GHOST_CONFLICT and f.get("conflictmailboxid")]
        return {**detection.processed, **result.counters,
                "conflictingEntries": [conflicting_entry(g) for g in ghosts]}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        mailbox_id = as_uuid(item["mailboxid"])
        rows = cql.serial_read(SELECT_ROW, (mailbox_id,))
        row = rows[0] if rows else None
        kind = item["kind"]
        if kind == ORPHAN_PATH:
            return self._recreate_row(cql, item, mailbox_id, row)
        if row is None:
            return Outcome(SKIPPED, item)   # deleted meanwhile: a later pass sees what is left
        row_path = _row_path(row)
        if kind == SAME_ID_CONFLICT:
            return self._realign(cql, item, mailbox_id, row, row_path)
        if row_path != path_string(item["namespace"], item["user"], item["mailboxname"]):
            return Outcome(SKIPPED, item)
        holder = cql.serial_read(SELECT_PATH, parse_path(row_path))
        if kind == ORPHAN_MAILBOX:
            if holder:
                return Outcome(SKIPPED, item) if holder[0]["mailboxid"] == mailbox_id else Outcome(
                    FAILED, item, error=f"path {row_path} now belongs to {holder[0]['mailboxid']}")
            if not cql.lwt(INSERT_PATH, (*parse_path(row_path), mailbox_id, row["uidvalidity"])):
                return Outcome(FAILED, item, error=f"path {row_path} was taken by another mailbox meanwhile")
            return Outcome(FIXED, item)
        # GHOST_CONFLICT: confirmed at SERIAL, then left to an administrator (no autoMerge).
        if not holder or holder[0]["mailboxid"] == mailbox_id:
            return Outcome(SKIPPED, item)
        item = {**item, "conflictmailboxid": str(holder[0]["mailboxid"])}
        return Outcome(FAILED, item, error=(
            f"ghost mailbox: row {mailbox_id} says {row_path}, which belongs to {holder[0]['mailboxid']}; "
            "merge it by hand (see conflictingEntries and the DAG documentation)"))

    def _recreate_row(self, cql: CqlSession, item: dict[str, Any], mailbox_id: Any,
                      row: dict[str, Any] | None) -> Outcome:
        if row is not None:
            return Outcome(SKIPPED, item)   # written meanwhile: a later pass checks it
        registered = _registered(cql, mailbox_id, item["paths"])
        if not registered:
            return Outcome(SKIPPED, item)   # the entry is gone: nothing to re-create
        winner = winning_path(None, {p: r["written"] for p, r in registered.items()})
        _write_row(cql, mailbox_id, winner, registered[winner]["uidvalidity"])
        _drop_losers(cql, mailbox_id, registered, winner)
        return Outcome(FIXED, item)

    def _realign(self, cql: CqlSession, item: dict[str, Any], mailbox_id: Any, row: dict[str, Any],
                 row_path: str) -> Outcome:
        registered = _registered(cql, mailbox_id, [*item["paths"], row_path])
        if not registered or set(registered) == {row_path}:
            return Outcome(SKIPPED, item)   # consistent now, or no entry left (a later pass sees it)
        winner = winning_path(row_path, {p: r["written"] for p, r in registered.items()})
        if winner != row_path:   # additive write first: the row follows the truth, then losers go
            _write_row(cql, mailbox_id, winner, row["uidvalidity"])
        _drop_losers(cql, mailbox_id, registered, winner)
        return Outcome(FIXED, item)


class IteratingRunner(ProcedureRunner):
    """James's ``maxIterations``: a new pass (own checkpoints) while the last one fixed something."""

    def run(self, spark: SparkSession, settings: JobSettings, endpoint: CqlEndpoint, options: RunOptions,
            running_options: dict[str, Any]) -> dict[str, Any]:
        passes: list[dict[str, Any]] = []
        for n in range(1, getattr(self.procedure, "max_iterations", 1) + 1):
            pass_options = options if n == 1 else replace(options, run_key=f"{options.run_key}/pass-{n}")
            report = super().run(spark, settings, endpoint, pass_options, running_options)
            passes.append(report)
            if report["outcome"] == DRY_RUN or not report["fixedInconsistencies"] or not report["remaining"]:
                break
        return combine_passes(passes)


def main(argv: Sequence[str] | None = None) -> int:
    return IteratingRunner(SolveMailboxInconsistencies()).main(argv if argv is not None else sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
