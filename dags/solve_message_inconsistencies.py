"""Solve message inconsistencies (imapUidTable is the truth, messageIdTable its projection)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import mailboxes_exist, user_exists
from mailplatform.procedures import Procedure, repair_dag

DOC = """
### Solve message inconsistencies

**Why it happens.** Every message of a mailbox is written twice: in `imapUidTable` (the source
of truth) and in `messageIdTable` (the projection IMAP lists from). Cassandra has no
transaction across the two: a timeout between the writes leaves them apart.

**Symptoms.** A message visible in JMAP but not in IMAP; a message marked seen in JMAP still
unseen in IMAP; an expunged message still listed by IMAP.

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store to be healthy.
2. `detect_repair_verify` (Spark) joins both tables and finds projection rows without a truth row
   (deleted), truth rows without a projection row (written) and projection rows that differ
   (rewritten from the truth). Each fix re-reads both rows at SERIAL consistency first.
   `imapUidTable` is never written. Detection then runs again to verify.
3. `report` shows James's counters (`processedImapUidEntries`, `processedMessageIdEntries`,
   `addedMessageIdEntries`, `updatedMessageIdEntries`, `removedMessageIdEntries`, `errors`);
   the full report is in S3 (`maintenance-reports/reports/<dag>__<run>/...`).

**How to run it.** Start with `dry_run` to see what would be fixed. The procedure can run with
traffic on: user actions during the run can create new inconsistencies, reported as
`newSinceDetection`, and a later run fixes them because the truth is never touched. Use `rate`
to bound the write load (James's default is 100 messages/s), `user` or `mailbox_ids` to limit
the scope. A failed run is safe to run again; a retried task resumes from its checkpoints.
The daily `detect_cassandra_inconsistencies` scan triggers this DAG when it finds work.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    if params.get("user"):
        args += ["--user", params["user"]]
    for mailbox_id in params.get("mailbox_ids") or []:
        args += ["--mailbox-id", mailbox_id]
    return args


dag = repair_dag(Procedure(
    dag_id="solve_message_inconsistencies",
    job="solve_message_inconsistencies",
    task_type="solve-message-inconsistencies",
    description="imapUidTable vs messageIdTable: fix the projection from the truth (James's SolveInconsistencies)",
    doc_md=DOC,
    tags=("inconsistencies", "messages"),
    params={
        "user": Param(None, type=["null", "string"], format="idn-email",
                      description="Only this user's mailboxes (empty: everybody)"),
        "mailbox_ids": Param([], type="array",
                             items={"type": "string", "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-"
                                                                  "[0-9a-f]{4}-[0-9a-f]{12}$"},
                             description="Only these mailboxes (time-based UUIDs); empty: all"),
    },
    args_from_params=job_args,
    live_checks=(user_exists("user"), mailboxes_exist("mailbox_ids")),
))
