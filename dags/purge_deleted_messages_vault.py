"""Purge the deleted-messages vault of the months older than the retention period (James's vault GC), monthly."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.procedures import Procedure, repair_dag
from mailplatform.scheduling import Schedule

from mailserver.model.james_units import DURATION_PATTERN

TASK_TYPE = "deleted-messages-blob-store-based-garbage-collection"
INSTANT_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})$"

DOC = """
### Purge the deleted messages vault

**What the vault is.** With `MAILSERVER_VAULT_ENABLED`, every message a user definitively
deletes (expunge, deletion by id, a deleted mailbox) is first kept in the vault: its content in
the S3 bucket of the month (`deleted-messages-YYYY-MM-01`), its metadata in James's tables
`deletedMessageMetadata`, `storageInformation` and `userPerBucket`. Admins restore or export
from it through WebAdmin (`/deletedMessages/...`). Nothing leaves it by itself: the guide
advises purging the expired messages **on the 1st of each month**, which this DAG does once
its schedule is enabled (`MAILPLATFORM_SCHEDULE__PURGE_DELETED_MESSAGES_VAULT=on`: the 1st of each
month at 03:00 UTC; it ships off, and the DAG's description says which is the case). It is
the same work as WebAdmin's `DELETE /deletedMessages?scope=expired` (James's task
`deleted-messages-blob-store-based-garbage-collection`), in Spark, resumable and audited.

**What expires.** Whole months: a month expires when it ended before the beginning of the
retention period, `now - retention` (the server's `MAILSERVER_VAULT_RETENTION_PERIOD`, one year
by default; give the same value in `retention`). `beginning_of_retention` sets that instant
directly (a rehearsal, or catching up a missed month on purpose).

**What this DAG does.**
1. `backends_healthy` waits for WebAdmin's Cassandra and ObjectStorage checks.
2. `detect_repair_verify` (Spark, `cassandra_maintenance` pool) drops the expired months whole,
   as James does: it lists them and their owners (`userPerBucket`), then purges each owner's
   partition of `deletedMessageMetadata` in bulk: the contents (S3 `DeleteObjects`, up to
   1,000 a request), the `storageInformation` rows, then the partition. Once all its owners are
   done, a month loses what remains of its S3 bucket (objects no entry names), the bucket, and
   its `userPerBucket` listing. `rate` bounds the entries purged per second; `slices` (groups of
   owner partitions) are checkpointed.
3. `report` shows James's `beginningOfRetentionPeriod` and `deletedBuckets`, with
   `deletedEntries`, `deletedOrphanObjects` and the entries found per month; the full report is in
   S3 and the run in `maintenance_audit`. A month that kept entries (a failed owner partition)
   fails the run and is kept: run the DAG again.

**How to run it.** Scheduled monthly once enabled (a scheduled run uses the defaults below: a
real purge with `retention` 1y; unpausing the DAG never starts one for a 1st already passed);
trigger it by hand with `dry_run` first to see the months
and entries that would go (nothing is deleted). Safe with traffic on: the current month is never
expired. Safe to re-run and to retry: a run killed midway and started again (the Airflow retry
keeps its run key, and with it the first attempt's beginning of the retention period) deletes
only what is left, and a second run finds nothing. Give
`bucket_prefix` when the server runs with `S3_BUCKET_PREFIX`.
"""


RETENTION_DEFAULT = "1y"


def describe(description: str, schedule: Schedule) -> str:
    """The DAG list's line: what the next scheduled run will do, if any."""
    if not schedule.enabled:
        return f"{description}; {schedule.sentence()}: nothing is purged unless triggered by hand"
    return (f"{description}; {schedule.sentence()}: each scheduled run DELETES for real (dry_run off) the months "
            f"that ended before now - {RETENTION_DEFAULT}")


def job_args(params: Mapping[str, Any]) -> list[str]:
    """The Spark job's options for these (validated) params."""
    args = ["--retention", params["retention"]]
    if params.get("beginning_of_retention"):
        args += ["--beginning-of-retention", params["beginning_of_retention"]]
    if params.get("bucket_prefix"):
        args += ["--bucket-prefix", params["bucket_prefix"]]
    return args


dag = repair_dag(Procedure(
    dag_id="purge_deleted_messages_vault",
    job="purge_deleted_messages_vault",
    task_type=TASK_TYPE,
    description="Deleted messages vault: drop the months older than the retention period (James's vault GC)",
    doc_md=DOC,
    tags=("vault", "s3", "retention"),
    params={
        "retention": Param(RETENTION_DEFAULT, type="string", pattern=DURATION_PATTERN,
                           description="Retention period (James's durations: 1y, 365d, 52 weeks; a bare number "
                                       "is days); the server's MAILSERVER_VAULT_RETENTION_PERIOD"),
        "beginning_of_retention": Param(None, type=["null", "string"], pattern=INSTANT_PATTERN,
                                        description="Instead of now - retention: purge the months that ended "
                                                    "before this instant (ISO-8601 with offset)"),
        "bucket_prefix": Param("", type="string", pattern=r"^[a-z0-9.-]*$",
                               description="The server's S3_BUCKET_PREFIX (empty when it has none)"),
    },
    args_from_params=job_args,
    schedule="0 3 1 * *",
    describe=describe,
))
