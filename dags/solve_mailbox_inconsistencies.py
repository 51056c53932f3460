"""Solve mailbox inconsistencies (mailboxPathV3 is the truth, the mailbox table its projection)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.procedures import Procedure, repair_dag

DOC = """
### Solve mailbox inconsistencies

**Why it happens.** Every mailbox is written twice: in `mailboxPathV3` (by user and name, the
source of truth) and in `mailbox` (by id). Creating, renaming or deleting a mailbox writes both,
and Cassandra has no transaction across them: a timeout between the writes leaves them apart.

**Symptoms.** `MailboxNotFoundException` in the logs; a folder the user sees but cannot open, or
opens but cannot find by name; a renamed folder listed under both names; a folder that cannot
be created because "it already exists". The operator guide recommends running this procedure
regularly, outside peak hours.

**This DAG stops traffic while it runs.** The guide says to run the repair with all services
offline. `enable_maintenance` switches the cluster's maintenance mode on first (SMTP answers
`421`, mailbox writes are refused), and `disable_maintenance` switches it off at the end as a
teardown: traffic resumes even when the repair fails. Plan a short window; a dry run does not
need one but still runs inside maintenance mode, since the scan must not race user actions.

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store.
2. `enable_maintenance` switches maintenance mode on.
3. `detect_repair_verify` (Spark) joins both tables and fixes, re-reading each entry at SERIAL
   consistency first:
   - a mailbox row nothing points to, on a free name (`orphanMailboxDAOEntry`): its name entry
     is written back;
   - name entries without a mailbox row (`orphanMailboxPathDAOEntry`): the row is re-created
     from the entry;
   - one mailbox under two names, or a row with an old name (`sameIdConflict`, a rename that
     did not finish): the most recently written name wins, the row follows it and the other
     name entry is removed;
   - **ghost mailbox** (`conflictingEntry`): a mailbox row whose name belongs to *another*
     mailbox, and nothing points to it. This DAG never merges them (see below).
   Detection then runs again to verify. With `max_iterations` above 1, the whole pass is run
   again while the previous pass fixed something (some fixes free a name another fix needs).
4. `report` shows James's counters (`processedMailboxEntries`, `processedMailboxPathEntries`,
   `fixedInconsistencies`, `conflictingEntries`, `errors`, `runningOptions`); the full report is
   in S3 (`maintenance-reports/reports/<dag>__<run>/...`).
5. `disable_maintenance` switches maintenance mode off, whatever happened before.

**How to run it.** Start with `dry_run` to see what would be fixed (the report lists the items
and the ghost pairs). Then run it for real. A failed run is safe to run again.

**Ghost mailboxes: the run ends failed on purpose.** A ghost is an old mailbox row left behind
when a delete failed half-way and the same name was created again. Its messages, if any, are
invisible to the user. The report's `conflictingEntries` lists each pair:
`mailboxDaoEntry` is the ghost (id and name), `mailboxPathDaoEntry` the live mailbox at that name.
James can merge the ghost into the live mailbox (its `autoMerge` option and the
`/cassandra/mailbox/merging` task); this platform does not do it yet. What to do:
1. Check whether the ghost holds messages:
   `SELECT count(*) FROM messageIdTable WHERE mailboxId = <ghost id>;`
2. None: the ghost is an empty leftover; delete its row
   (`DELETE FROM mailbox WHERE id = <ghost id>;`) and run this DAG again: it ends green.
3. Some: do not delete anything. The messages must be moved into the live mailbox (James's
   mailbox merging). Escalate, with the pair from the report.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    return ["--max-iterations", str(params["max_iterations"])]


dag = repair_dag(Procedure(
    dag_id="solve_mailbox_inconsistencies",
    job="solve_mailbox_inconsistencies",
    task_type="solve-mailbox-inconsistencies",
    description="mailbox vs mailboxPathV3 (truth): offline repair in maintenance mode (James's SolveInconsistencies)",
    doc_md=DOC,
    tags=("inconsistencies", "mailboxes"),
    params={
        "max_iterations": Param(1, type="integer", minimum=1, maximum=20,
                                description="Run the whole pass again while the previous one fixed something, "
                                            "at most this many times (James's maxIterations, default 1)"),
    },
    args_from_params=job_args,
    maintenance_mode=True,
))
