"""Recompute current quotas: ``quotaCurrentValue`` from the messages of each user's mailboxes.

James's ``recompute-current-quotas`` (ADR 0028). The current quota of a user is a projection
kept by the ``ListeningCurrentQuotaUpdater`` listener (+/- on Added, Expunged, MailboxDeletion);
a failed or retried listener call leaves it wrong for good. The truth is the messages.

* Component ``MAILBOX``: quota root ``#private&<user>``, whose ``quotaCurrentValue`` identifier
  is ``QuotaRoot.asString()`` (``#private&bob@example.com@example.com`` for a virtual-hosted
  user: computed by the server's own ``mailserver.model.quota``, shipped in the job's zip).
  count = the messages listed in ``messageIdTable`` for the user's ``#private`` mailboxes,
  size = the sum of their ``fullContentOctets`` (``messageV3`` when a row lacks it), as James's
  METADATA listing does.
* ``SIEVE`` and ``JMAP_UPLOADS`` are refused: this server stores no Sieve scripts, and does not
  count its JMAP uploads' usage (``uploadsV2`` rows are kept, no usage counter is written).

Detection joins the whole picture once (``outdatedCurrentQuota``: stored value differs from the
messages, a missing row counting as 0). Repair, per quota root: re-read the user's mailboxes and
their messages, read the stored counters, and add the difference to each counter that differs
(one counter UPDATE each, as James's ``setCurrentQuotas``; a counter is never overwritten).
Not safe with traffic on (a delivery between the two reads is counted twice); the DAG runs it in
maintenance mode, and a re-run converges because the messages are never written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from spark_apps.common.cassandra_tables import USER_NAMESPACE, read_table
from spark_apps.common.cql import CqlEndpoint, CqlSession
from spark_apps.common.mail_users import private_mailboxes, registered_users, users_in_scope
from spark_apps.common.procedure import FIXED, SKIPPED, Detection, Outcome, Procedure, run_procedure
from spark_apps.common.settings import JobSettings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OUTDATED = "outdatedCurrentQuota"
MAILBOX = "MAILBOX"
COUNT, SIZE = "count", "size"
COMPONENTS = ("MAILBOX", "SIEVE", "JMAP_UPLOADS")   # James's QuotaComponent values
NOT_STORED = {
    "SIEVE": "this server stores no Sieve scripts (no sieve tables), so there is no usage to recompute",
    "JMAP_UPLOADS": "this server stores no JMAP upload usage (uploads are not counted): none to recompute",
}


def quota_identifier(user: str | None) -> str | None:
    """The ``quotaCurrentValue`` identifier of ``user``'s root, by the server's own rule; None if invalid."""
    from mailserver.model.address import InvalidAddress, Username
    from mailserver.model.quota import QuotaRoot

    if not user:
        return None
    try:
        return QuotaRoot.for_user(Username(user)).as_string()
    except InvalidAddress:
        return None


def message_sizes(message_id_rows: DataFrame, message_v3: DataFrame) -> DataFrame:
    """Pure: (mailboxid, size) per listed message; a row without size takes it from ``messageV3``."""
    from pyspark.sql import functions as F

    complete = message_id_rows.filter(F.col("fullcontentoctets").isNotNull())
    partial = (message_id_rows.filter(F.col("fullcontentoctets").isNull()).drop("fullcontentoctets")
               .join(message_v3.select("messageid", "fullcontentoctets"), "messageid", "left"))
    return (complete.unionByName(partial)
            .select("mailboxid", F.coalesce(F.col("fullcontentoctets"), F.lit(0)).cast("long").alias("size")))


def current_quota_inconsistencies(users: DataFrame, mailboxes: DataFrame, sizes: DataFrame,
                                  stored: DataFrame) -> DataFrame:
    """Pure: (kind, user, identifier) of every quota root whose stored MAILBOX usage differs from its messages.

    ``users``: (user); ``mailboxes``: (user, mailboxid) of personal mailboxes; ``sizes``:
    (mailboxid, size) per message; ``stored``: ``quotaCurrentValue`` rows (identifier,
    quotacomponent, quotatype, currentvalue).
    """
    from pyspark.sql import functions as F

    identifier = F.udf(quota_identifier, "string")
    usage = (sizes.join(mailboxes, "mailboxid").groupBy("user")
             .agg(F.count(F.lit(1)).alias("count"), F.sum("size").alias("size")))
    value = F.coalesce(F.col("currentvalue"), F.lit(0))
    current = (stored.filter(F.col("quotacomponent") == MAILBOX).groupBy("identifier")
               .agg(F.sum(F.when(F.col("quotatype") == COUNT, value).otherwise(0)).alias("stored_count"),
                    F.sum(F.when(F.col("quotatype") == SIZE, value).otherwise(0)).alias("stored_size")))
    roots = (users.select("user").distinct().join(usage, "user", "left")
             .withColumn("identifier", identifier(F.col("user"))))
    compared = roots.join(current, "identifier", "left")
    differs = ((F.coalesce(F.col("count"), F.lit(0)) != F.coalesce(F.col("stored_count"), F.lit(0)))
               | (F.coalesce(F.col("size"), F.lit(0)) != F.coalesce(F.col("stored_size"), F.lit(0))))
    return compared.filter(differs).select(F.lit(OUTDATED).alias("kind"), "user", "identifier")


def usage_of(cql: CqlSession, user: str) -> tuple[int, int]:
    """(count, size) of ``user``'s personal mailboxes, read now (the repair's truth)."""
    mailboxes = cql.serial_read("SELECT mailboxid FROM mailboxpathv3 WHERE namespace = ? AND user = ?",
                                (USER_NAMESPACE, user))
    count = size = 0
    for mailbox in mailboxes:
        for row in cql.execute("SELECT messageid, fullcontentoctets FROM messageidtable WHERE mailboxid = ?",
                               (mailbox["mailboxid"],)):
            octets = row["fullcontentoctets"]
            if octets is None:   # an incomplete projection row: James falls back to messageV3
                content = cql.execute("SELECT fullcontentoctets FROM messagev3 WHERE messageid = ?",
                                      (row["messageid"],))
                if not content or content[0]["fullcontentoctets"] is None:
                    raise ValueError(f"size of message {row['messageid']} unknown (no messageV3 row)")
                octets = content[0]["fullcontentoctets"]
            count += 1
            size += octets
    return count, size


class RecomputeCurrentQuotas(Procedure):
    job = "recompute-current-quotas"
    slice_columns = ("user",)

    def __init__(self) -> None:
        self.user: str | None = None
        self.components: tuple[str, ...] = (MAILBOX,)

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--user", help="only this user's quota root (default: every user)")
        parser.add_argument("--quota-component", action="append", default=[], choices=COMPONENTS,
                            help="component to recompute (repeatable; default: every one this server stores)")

    def configure(self, args: argparse.Namespace) -> dict[str, Any]:
        refused = [f"{c}: {NOT_STORED[c]}" for c in dict.fromkeys(args.quota_component) if c in NOT_STORED]
        if refused:
            raise ValueError("--quota-component " + "; ".join(refused) + ". Only MAILBOX can be recomputed")
        self.user = args.user.strip().lower() if args.user else None
        if self.user is not None and quota_identifier(self.user) is None:
            raise ValueError(f"--user {args.user!r} is not a valid username")
        options: dict[str, Any] = {"usersPerSecond": args.rate, "quotaComponents": list(self.components)}
        if self.user:
            options["user"] = self.user
        return options

    def detect(self, spark: SparkSession, settings: JobSettings) -> Detection:
        from pyspark.sql import functions as F

        # Not cached: a stage mixing cached blocks with connector splits waits forever on locality in
        # local mode (the splits prefer the Cassandra host); the table is small, reading it twice is cheap.
        mailboxes = private_mailboxes(spark, settings, self.user)
        users = users_in_scope(registered_users(spark, settings), mailboxes, self.user).cache()
        rows = read_table(spark, settings, "messageidtable", ["mailboxid", "messageid", "fullcontentoctets"])
        if self.user is not None:
            rows = rows.filter(F.col("mailboxid").isin([r["mailboxid"] for r in mailboxes.collect()]))
        sizes = message_sizes(rows, read_table(spark, settings, "messagev3", ["messageid", "fullcontentoctets"]))
        stored = read_table(spark, settings, "quotacurrentvalue",
                            ["identifier", "quotacomponent", "quotatype", "currentvalue"])
        processed = {"scannedQuotaRoots": users.count()}
        return Detection(current_quota_inconsistencies(users, mailboxes, sizes, stored), processed)

    def report_fields(self, detection: Detection, result: Any) -> dict[str, Any]:
        failed = sorted({f["user"] for f in result.failures})
        processed = detection.processed["scannedQuotaRoots"] - len(failed)
        counters = {"recomputedQuotaRoots": 0, **result.counters}
        return {"processedQuotaRoots": processed, "failedQuotaRoots": failed,
                "recomputeSingleQuotaComponentResults": [
                    {"quotaComponent": MAILBOX, "processedQuotaRoots": processed, "failedQuotaRoots": failed}],
                **counters}

    def repair(self, endpoint: CqlEndpoint, item: dict[str, Any]) -> Outcome:
        cql = endpoint.session()
        user, identifier = item["user"], item["identifier"]
        if identifier is None:
            raise ValueError(f"{user!r} is not a valid username: no quota root")
        count, size = usage_of(cql, user)
        rows = cql.execute("SELECT quotatype, currentvalue FROM quotacurrentvalue "
                           "WHERE identifier = ? AND quotacomponent = ?", (identifier, MAILBOX))
        stored = {r["quotatype"]: r["currentvalue"] or 0 for r in rows}
        deltas = {COUNT: count - stored.get(COUNT, 0), SIZE: size - stored.get(SIZE, 0)}
        if not any(deltas.values()):
            return Outcome(SKIPPED, item)
        for quota_type, delta in deltas.items():
            if delta:
                cql.execute("UPDATE quotacurrentvalue SET currentvalue = currentvalue + ? "
                            "WHERE identifier = ? AND quotacomponent = ? AND quotatype = ?",
                            (delta, identifier, MAILBOX, quota_type))
        fixed = {**item, "storedCount": stored.get(COUNT, 0), "storedSize": stored.get(SIZE, 0),
                 "count": count, "size": size}
        return Outcome(FIXED, fixed, "recomputedQuotaRoots")


def main(argv: Sequence[str] | None = None) -> int:
    return run_procedure(RecomputeCurrentQuotas(), argv)


if __name__ == "__main__":
    sys.exit(main())
