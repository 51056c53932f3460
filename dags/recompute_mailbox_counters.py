"""Recompute mailbox counters (message count and unseen count per mailbox, James's mailboxCounters)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.procedures import Procedure, repair_dag

DOC = """
### Recompute mailbox counters

**Why it happens.** The number of messages and of unseen messages of each mailbox is kept in
`mailboxCounters`, a projection updated after the message itself is written (append, flag
change, expunge). A failed counter update leaves it wrong for good.

**Symptoms.** A mail client (IMAP STATUS/SELECT, JMAP `totalEmails`/`unreadEmails`) shows a
wrong message or unread count; James logs warnings starting with "Invalid mailbox counters".

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store to be healthy.
2. `detect_repair_verify` (Spark) computes the count and unseen count of every mailbox from
   the message tables and finds the mailboxes whose stored counters differ. Only those are
   repaired: their messages are listed again (each checked in `imapUidTable`, the source of
   truth, unless `trust_message_projection`), the stored counters are read, and the difference
   is applied as one counter update. Detection then runs again to verify.
3. `report` shows James's counters (`processedMailboxes`, `failedMailboxes`) and
   `recomputedMailboxes`; the full report is in S3 (`maintenance-reports/reports/<dag>__<run>/...`).

**How to run it.** This procedure is **not concurrency-safe**: a message appended, flagged or
expunged in a mailbox while that mailbox is being recomputed is not counted, and its counters
stay wrong. It is advised to run it offline, and re-running it converges (ADR 0023): each run
starts from what is stored. Maintenance mode is therefore not switched on by this DAG (the
repair touches only the mailboxes found wrong, within seconds each):
* after a few failed counter updates (the usual case), run it with traffic on, then run it
  again if the report shows `newSinceDetection` or `unresolved`;
* when many mailboxes are wrong (after an incident, a restore, a bulk import), switch
  maintenance mode on by hand first (`PUT /maintenance` on WebAdmin; SMTP answers 421 and
  mailbox writes are refused), run this DAG, then switch it off (`DELETE /maintenance`).

Start with `dry_run` to see which mailboxes are wrong. `trust_message_projection` (James's
`trustMessageProjection`) counts `messageIdTable` as it is, without checking every message in
`imapUidTable`: faster, and right only when the message projection is known to be consistent
(run `solve_message_inconsistencies` first). `rate` bounds the mailboxes repaired per second.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    return ["--trust-message-projection"] if params.get("trust_message_projection") else []


dag = repair_dag(Procedure(
    dag_id="recompute_mailbox_counters",
    job="recompute_mailbox_counters",
    task_type="recompute-mailbox-counters",
    description="mailboxCounters: recompute count and unseen of the mailboxes found wrong (James's task)",
    doc_md=DOC,
    tags=("inconsistencies", "counters"),
    params={
        "trust_message_projection": Param(
            False, type="boolean",
            description="Count messageIdTable rows as they are, without checking each one in imapUidTable"),
    },
    args_from_params=job_args,
    maintenance_mode=False,   # advised offline, but switched by hand when needed (see doc_md)
))
