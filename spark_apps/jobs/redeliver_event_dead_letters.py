"""Redeliver event dead letters: all groups, one group, or one event (James's three redelivery tasks).

A dead letter is a mailbox event a listener group failed to handle after its retries (or whose
publication failed: the bus's dispatching-failure group). James keeps them in ``event_dead_letters``
(partition ``"group"``, clustering ``insertionId``, column ``event`` = the event's JSON).

* detection: the dead letters in scope (whole table, one partition, one row), read through the
  Spark Cassandra Connector; one item per dead letter, its ``kind`` is its group, so the report
  counts what was found per group;
* redelivery, per item, on the executors: the row is read again (another redelivery, WebAdmin's
  or an earlier attempt's, may have taken it: then it is skipped), its JSON is published
  persistent, ``text/plain``, with publisher confirms, to ``mailboxEvent-retryExchange-<group>``
  with routing key ``""`` and ``retry-count: 0`` (the group's retry path, as James), or for the
  dispatching-failure group to ``mailboxEvent-exchange`` (every group again); the row is deleted
  only once the broker confirmed. A failed publish (broker down, group not bound: unroutable)
  leaves the row and is reported with its id for a rerun;
* verification: detection again; what this run tried and is still there is unresolved.

Resumable: a redelivered row is gone, so a killed run started again finds only the rest (slices
already finished are also checkpointed, as in every procedure). At-least-once: a kill between a
confirm and the delete leaves a row whose event was already published; the next run publishes it
again (listeners are idempotent, as for any retry of the bus). Report: James's
``successfulRedeliveriesCount`` / ``failedRedeliveriesCount`` / ``group`` / ``insertionId``, plus
per group ``found`` (this attempt's detection), ``redelivered``, ``failed`` and ``failedInsertionIds``.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.amqp import publisher
from spark_apps.common.cassandra_tables import as_uuid, read_table
from spark_apps.common.cql import CqlEndpoint
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ALL, GROUP, EVENT = "all", "group", "event"
SCOPES = (ALL, GROUP, EVENT)
# James's task types (webadmin reference §13), one per scope: the report's "type".
TASK_TYPES = {ALL: "event-dead-letters-redeliver-all", GROUP: "event-dead-letters-redeliver-group",
              EVENT: "event-dead-letters-redeliver-one"}
REDELIVERED_PREFIX = "redelivered|"     # per-group counter names (checkpointed with the slice)
SELECT_EVENT = 'SELECT event FROM event_dead_letters WHERE "group" = ? AND insertionid = ?'
DELETE_EVENT = 'DELETE FROM event_dead_letters WHERE "group" = ? AND insertionid = ?'
PUBLISHER_CONNECTIONS = 2


def task_type(scope: str) -> str:
    return TASK_TYPES[scope]


def check_scope(scope: str, group: str | None, insertion_id: str | None) -> None:
    """Pure: the scope's companions are there and well-formed; raises ValueError otherwise."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    if scope in (GROUP, EVENT) and not group:
        raise ValueError(f"scope {scope} needs a group")
    if scope == ALL and (group or insertion_id):
        raise ValueError("scope all takes neither a group nor an insertion id")
    if scope == GROUP and insertion_id:
        raise ValueError("scope group takes no insertion id (use scope event)")
    if scope == EVENT:
        if not insertion_id:
            raise ValueError("scope event needs an insertion id")
        try:
            uuid.UUID(insertion_id)
        except ValueError as exc:
            raise ValueError(f"insertion id {insertion_id!r} is not a UUID") from exc


def in_scope(dead_letters: DataFrame, scope: str, group: str | None, insertion_id: str | None) -> DataFrame:
    """Pure: one item per dead letter in scope: (kind = its group, group, insertionid)."""
    from pyspark.sql import functions as F

    rows = dead_letters
    if scope in (GROUP, EVENT):
        rows = rows.filter(F.col("group") == F.lit(group))
    if scope == EVENT:
        rows = rows.filter(F.lower(F.col("insertionid")) == str(insertion_id).lower())
    return rows.filter(F.col("insertionid").isNotNull()).select(
        F.col("group").alias("kind"), "group", "insertionid")


def destination(group: str, bus: str = "mailboxEvent") -> tuple[str, dict[str, Any]]:
    """Pure: where a dead letter of ``group`` is published again, and its headers (James's redelivery)."""
    from mailserver.events.naming import EVENT_BUS_ID_HEADER, RETRY_COUNT_HEADER, BusNames

    names = BusNames(bus)
    if group == names.dispatching_failure_group:   # its publication failed: dispatch to every group again
        return names.exchange, {EVENT_BUS_ID_HEADER: _REDELIVERY_BUS_ID}
    return names.retry_exchange(group), {RETRY_COUNT_HEADER: 0}


def group_report(found: Mapping[str, int], counters: Mapping[str, int],
                 failures: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Pure: per group, what was found, redelivered and failed (with the ids to replay)."""
    redelivered = {k[len(REDELIVERED_PREFIX):]: v for k, v in counters.items() if k.startswith(REDELIVERED_PREFIX)}
    failed: dict[str, list[str]] = {}
    for f in failures:
        failed.setdefault(str(f.get("group")), []).append(str(f.get("insertionid")))
    groups = sorted(set(found) | set(redelivered) | set(failed))
    return {g: {"found": int(found.get(g, 0)), "redelivered": int(redelivered.get(g, 0)),
                "failed": len(failed.get(g, [])), "failedInsertionIds": sorted(failed.get(g, []))}
            for g in groups}


# Not a secret, not a node: the eventBusId header of what is dispatched again to every group.
_REDELIVERY_BUS_ID = str(uuid.uuid4())


class RedeliverEventDeadLetters(Procedure):
    job = TASK_TYPES[ALL]
    slice_columns = ("group", "insertionid")

    def __init__(self) -> None:
        self.scope = ALL
        self.group: str | None = None
        self.insertion_id: str | None = None
        self.amqp_url: str | None = None
        self.bus = "mailboxEvent"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("redelivery")
        g.add_argument("--scope", choices=SCOPES, default=ALL, help="all groups, one group, or one event")
        g.add_argument("--group", help="the listener group (scope group or event)")
        g.add_argument("--insertion-id", help="the dead letter's insertion id (scope event)")
        g.add_argument("--bus", default="mailboxEvent", help="event bus name (default mailboxEvent)")
        g.add_argument("--amqp-url", help="broker and vhost to publish to [AMQP_URL]; needed unless --dry-run")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        check_scope(args.scope, args.group, args.insertion_id)
        self.scope, self.group, self.insertion_id, self.bus = args.scope, args.group, args.insertion_id, args.bus
        self.job = task_type(self.scope)
        self.amqp_url = args.amqp_url or os.environ.get("AMQP_URL") or None
        if not self.amqp_url and not args.dry_run:
            raise ValueError("no broker to publish to: give --amqp-url or set AMQP_URL")
        return {"scope": self.scope, "group": self.group, "insertionId": self.insertion_id}

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        dead_letters = read_table(spark, settings, "event_dead_letters", ["group", "insertionid"])
        items = in_scope(dead_letters, self.scope, self.group, self.insertion_id)
        found = {r["kind"]: r["count"] for r in items.groupBy("kind").count().collect()}
        return Detection(items, found)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        groups = group_report(detection.processed, result.counters, result.failures)
        others = {k: v for k, v in result.counters.items() if not k.startswith(REDELIVERED_PREFIX)}
        return {"group": self.group, "insertionId": self.insertion_id,
                "successfulRedeliveriesCount": sum(g["redelivered"] for g in groups.values()),
                "failedRedeliveriesCount": len(result.failures), "groups": groups, **others}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        group, insertion_id = item["group"], as_uuid(item["insertionid"])
        rows = cql.execute(SELECT_EVENT, (group, insertion_id))
        if not rows:
            return Outcome(SKIPPED, item)   # redelivered or deleted since the detection
        exchange, headers = destination(group, self.bus)
        assert self.amqp_url is not None   # configure() refuses a real run without one
        # Returns once the broker confirmed it: only then may the row go.
        publisher(self.amqp_url, PUBLISHER_CONNECTIONS).publish(exchange, "", rows[0]["event"], headers)
        cql.execute(DELETE_EVENT, (group, insertion_id))
        return Outcome(FIXED, item, REDELIVERED_PREFIX + group)


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(RedeliverEventDeadLetters(), argv)


if __name__ == "__main__":
    sys.exit(main())
