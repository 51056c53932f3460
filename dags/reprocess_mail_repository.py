"""Reprocess the mails of a mail repository once the cause that put them there is fixed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import mail_queue_exists, repository_exists
from mailplatform.mail_queues import (
    COMMON_PARAMS,
    QUEUE_NAME_PATTERN,
    REPOSITORY_URL_PATTERN,
    SLICES,
    QueueProcedure,
    common_job_args,
    filter_args,
    filter_params,
    queue_dag,
)

DOC = """
### Reprocess a mail repository

**When.** A mail repository keeps mails that processing could not finish. The guide's standard ones:
* `cassandra://var/mail/error/`: unexpected errors during processing (performance-related
  exceptions, a logical bug). **Fix the cause first**: the `error` field of each mail
  (`GET /mailRepositories/var%2Fmail%2Ferror%2F/mails/{key}`) helps the diagnosis, correlated with
  the logs; then reprocess;
* `cassandra://var/mail/address-error/`: mail to a non-existing recipient of a local domain.
  Create the user (or the alias) first, then reprocess;
* `cassandra://var/mail/rrt-error/`: a runtime error of recipient rewriting, typically a loop.
  Check the user's mappings (`GET /mappings/user/{address}`), break the loop by removing a
  rewrite entry (alias, group member, forward, address, domain or regex mapping routes), then
  reprocess;
* `cassandra://var/mail/relay-denied/`: review it rather than reprocess it (a missing
  authentication, a spammer to blacklist);
* `cassandra://var/mail/drained/`: what `drain_mail_queue` moved aside.

**Before running it.** `GET /mailRepositories/{path}` gives the size. Run with `dry_run` first:
the report counts the mails that would be reprocessed (`detected.storedMail`) and touches nothing.
A mail is stored in the state of the processor that stored it (`error`, `local-address-error`,
`rrt-error` ...): restarting it there stores it again. Set `target_processor` to `transport`
(recipient rewriting, then local or remote delivery) or `root` (the whole chain again) for these
repositories; an empty `target_processor` keeps each mail's stored state, as James does.

**What this DAG does.**
1. `check_params`, then `backends_healthy` (WebAdmin's Cassandra, RabbitMQ, object storage) and
   `broker_healthy` (the broker of the `rabbitmq_management` connection).
2. `queue_drained` waits until the target queue's work queue holds at most `max_queue_depth`
   messages, so reprocessing does not pile onto a backlog.
3. `detect_reprocess_verify` (Spark, `cassandra_maintenance` pool) lists the repository's mails,
   keeps those matching every filter given (`sender`, `recipient`: address or `*@domain`; `name`:
   the mail key; `older_than`: last updated longer ago; `limit`: at most that many, oldest first)
   and reprocesses each with the server's own code (James's reprocess): marked
   `mailRepository-reprocessing`, put in `target_processor` (its stored state when empty),
   enqueued on `target_queue` (default `spool`), then removed from the repository; at most
   `rate` mails per second. It looks again: a mail this run reprocessed and still (or again) in
   the repository is unresolved, typically because it failed again: the cause is not fixed.
4. `report` shows James's `reprocessing-all` fields (`repositoryPath`, `targetQueue`,
   `targetProcessor`, `initialCount`, `remainingCount`, ...) and `reprocessedMails`.
5. `backends_healthy_after` checks the backends again.

**Good to know.** Safe to re-run: a mail already reprocessed is no longer in the repository. A
run killed between an enqueue and the removal enqueues that mail again: local delivery keeps one
copy per mail and recipient, remote delivery may send it twice.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    args = ["--repository", params["repository"], "--queue", params["target_queue"], *filter_args(params)]
    if params.get("target_processor"):
        args += ["--processor", params["target_processor"]]
    if params.get("limit") is not None:
        args += ["--limit", str(params["limit"])]
    return [*args, *common_job_args(params)]


def summary(report: Mapping[str, Any]) -> list[str]:
    return [f"{report.get('repositoryPath')}: {report.get('initialCount')} mails, "
            f"{report.get('detected', {}).get('storedMail', 0)} selected, "
            f"{report.get('reprocessedMails', 0)} reprocessed to {report.get('targetQueue')} "
            f"(processor {report.get('targetProcessor') or 'stored state'}), {report.get('remainingCount')} left"]


dag = queue_dag(QueueProcedure(
    dag_id="reprocess_mail_repository",
    job="reprocess_mail_repository",
    report_type="reprocessing-all",
    spark_task_id="detect_reprocess_verify",
    description="Mail repository: reprocess its mails once the cause is fixed (James's reprocessing-all)",
    doc_md=DOC,
    tags=("mail-repository", "reprocess"),
    params={
        "dry_run": Param(False, type="boolean", description="Count the mails to reprocess and stop"),
        "repository": Param("cassandra://var/mail/error/", type="string", pattern=REPOSITORY_URL_PATTERN,
                            description="The mail repository URL (error, address-error, rrt-error, drained ...)"),
        "target_queue": Param("spool", type="string", pattern=QUEUE_NAME_PATTERN,
                              description="The queue the mails go to"),
        "target_processor": Param(None, type=["null", "string"], pattern=r"^[A-Za-z0-9_.-]+$",
                                  description="The processor they restart in (empty: each mail's stored state)"),
        **filter_params("last updated"),
        "limit": Param(None, type=["null", "integer"], minimum=1,
                       description="At most this many mails, oldest first (empty: all)"),
        "max_queue_depth": Param(10000, type="integer", minimum=0,
                                 description="Wait until the target work queue holds at most this many messages"),
        **COMMON_PARAMS,
        "slices": SLICES,
    },
    job_args=job_args,
    gate_queue="{{ params.target_queue }}",
    summary=summary,
    live_checks=(repository_exists("repository"), mail_queue_exists("target_queue")),
))
