"""Recompute current quotas (quotaCurrentValue from the messages of each user's mailboxes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import user_exists
from mailplatform.procedures import Procedure, repair_dag

DOC = """
### Recompute current quotas

**Why it happens.** The space and message count a user uses (`quotaCurrentValue`) is not
computed from the mailboxes on every read: a listener of the event bus adds and subtracts on
every append, expunge and mailbox deletion. When Cassandra fails that write (or a retried event
is counted twice), the value stays wrong.

**Symptoms.** Incorrect quotas seen in the mail client (IMAP `GETQUOTAROOT`, JMAP quotas):
a user refused for being over quota with an almost empty mailbox, or never refused.

**What this DAG does.**
1. `backends_healthy` waits for Cassandra and the object store to be healthy.
2. `enable_maintenance` puts the cluster in maintenance mode (SMTP answers `421`, mailbox writes
   are refused): the guide says this task **is not concurrent-safe**, a delivery during the
   recomputation of a user would leave a wrong value.
3. `detect_repair_verify` (Spark) counts the messages of every user's personal mailboxes and
   sums their sizes, compares with the stored values, and for each user that differs re-reads
   the messages and the stored counters and adds the difference (counters are never
   overwritten). Messages are never written. Detection then runs again to verify.
4. `report` shows James's counters (`processedQuotaRoots`, `failedQuotaRoots` (usernames),
   `recomputeSingleQuotaComponentResults`, and `recomputedQuotaRoots`, the roots that were wrong).
5. `disable_maintenance` always runs (teardown), so traffic resumes even when the repair failed.

**How to run it.** Start with `dry_run` (it still enables maintenance mode briefly; the report
lists the quota roots that would change). Limit with `user`; `rate` bounds the users repaired
per second (James's `usersPerSecond`, default 1). Only the `MAILBOX` component exists here:
this server stores no Sieve scripts nor JMAP uploads. Re-running is safe and converges. The
daily `detect_cassandra_inconsistencies` scan triggers this DAG when it finds work.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    args: list[str] = []
    if params.get("user"):
        args += ["--user", params["user"]]
    for component in params.get("quota_components") or []:
        args += ["--quota-component", component]
    return args


dag = repair_dag(Procedure(
    dag_id="recompute_current_quotas",
    job="recompute_current_quotas",
    task_type="recompute-current-quotas",
    description="quotaCurrentValue recomputed from the users' messages (James's RecomputeCurrentQuotas)",
    doc_md=DOC,
    tags=("inconsistencies", "quota"),
    params={
        "user": Param(None, type=["null", "string"], format="idn-email",
                      description="Only this user's quota root (empty: every user)"),
        "quota_components": Param(["MAILBOX"], type="array", items={"type": "string", "enum": ["MAILBOX"]},
                                  uniqueItems=True,
                                  description="Quota components to recompute. Only MAILBOX: this server stores "
                                              "no Sieve scripts (SIEVE), counts no JMAP upload usage (JMAP_UPLOADS)"),
    },
    args_from_params=job_args,
    live_checks=(user_exists("user"),),
    maintenance_mode=True,
))
