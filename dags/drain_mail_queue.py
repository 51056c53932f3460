"""Drain a mail queue: delete, move to a mail repository, or hold the mails matching filters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import mail_queue_exists
from mailplatform.mail_queues import (
    COMMON_PARAMS,
    DURATION_PATTERN,
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
### Drain a mail queue

**When.** The guide: you often need to check the mail queue to make sure all emails are delivered
properly. Queues clog for two reasons: an exceeded volume (providers rate-limit by IP and sender
reputation) and spam (a spam wave, a compromised account, or your IP blocked). "In case you need
to clear an email queue because there are only spam or trash emails in it", or to take some mails
out of the way while the rest flows, this is the procedure. James's WebAdmin does it one filter at
a time (`DELETE /mailQueues/{name}/mails?sender=|recipient=|name=`); here filters combine.

**Before running it.** Look at the queue: WebAdmin `GET /mailQueues/{name}` (size) and
`GET /mailQueues/{name}/mails?limit=100` (who sends to whom). Decide the filters, then run
**with `dry_run` on first (the default)**: the report counts exactly the mails that match
(`detected.matchingMail`, with `detectedItems` listing them) and nothing is touched.

**What this DAG does.**
1. `check_params` refuses contradictory params (a move without repository, a hold without
   `hold_for`, no filter at all without `all_mails`).
2. `backends_healthy` waits for WebAdmin's Cassandra, RabbitMQ and object-storage checks, and
   `broker_healthy` for the broker of the `rabbitmq_management` connection (vhost there, no
   memory or disk alarm).
3. `detect_drain_verify` (Spark, `cassandra_maintenance` pool) scans the queue's Cassandra
   browse view (`enqueuedMailsV4` from `browseStart`, minus `deletedMailsV2`), keeps the mails
   matching **every** filter given (`sender`, `recipient`: an address or `*@domain`; `name`;
   `older_than`: enqueued longer ago), then acts on each through the queue's own code, at most
   `rate` mails per second:
   * `delete`: James's remove: the mail is marked deleted (its broker message is skipped when a
     spooler reaches it) and its blobs are deleted;
   * `move` (default): the mail is stored in the mail repository `repository` (default
     `cassandra://var/mail/drained/`), then removed from the queue. Review it there with WebAdmin
     (`GET /mailRepositories/var%2Fmail%2Fdrained%2F/mails`), then delete it or reprocess it with
     `reprocess_mail_repository` once the cause is gone;
   * `hold`: the mail is enqueued again with a delay of `hold_for`, then removed: it is delivered
     when the delay runs out, or earlier with `flush_delayed_mails`.
   The scan runs again to verify that no matching mail is left.
4. `report` shows `initialCount`, `remainingCount` (James's counts: the browse view),
   `deletedMails` / `movedMails` / `heldMails`, `brokerReadyMessages`, and the outcome; the full
   report (with the ids) is in S3 and the run in `maintenance_audit`.
5. `backends_healthy_after` checks the backends again.

**Good to know.** Safe with traffic on and safe to re-run: a mail dequeued or removed meanwhile is
skipped, a killed run continues from its checkpointed slices, a retried move stores the same mail
under the same key. The broker keeps the messages of removed mails until a consumer skips them
(James's design): the queue's broker depth drops only once the spoolers pass them. To stop new
spam from arriving while you drain, fix the source first (block the account, the relay).
"""


def validate_params(params: Mapping[str, Any]) -> None:
    """The combinations a schema cannot say; ValueError names the problem."""
    action = params["action"]
    if action == "hold" and not params.get("hold_for"):
        raise ValueError("action hold needs hold_for (how long the mails wait, e.g. 2h)")
    if action != "hold" and params.get("hold_for"):
        raise ValueError(f"hold_for is only for action hold, not {action}")
    if action == "move" and not params.get("repository"):
        raise ValueError("action move needs a repository URL (e.g. cassandra://var/mail/drained/)")
    filtered = any(params.get(name) for name in ("sender", "recipient", "name", "older_than"))
    if not filtered and not params.get("all_mails"):
        raise ValueError("no filter given: set sender, recipient, name or older_than, or all_mails=true to act on "
                         "every mail of the queue")
    if filtered and params.get("all_mails"):
        raise ValueError("all_mails=true with filters: drop the filters or all_mails")


def job_args(params: Mapping[str, Any]) -> list[str]:
    args = ["--queue", params["queue"], "--action", params["action"], *filter_args(params)]
    if params["action"] == "move":
        args += ["--repository", params["repository"]]
    if params["action"] == "hold":
        args += ["--hold-for", params["hold_for"]]
    return [*args, *common_job_args(params)]


def summary(report: Mapping[str, Any]) -> list[str]:
    done = {k: report.get(k, 0) for k in ("deletedMails", "movedMails", "heldMails") if k in report}
    return [f"queue {report.get('mailQueueName')}: {report.get('initialCount')} mails, "
            f"{report.get('detected', {}).get('matchingMail', 0)} matching, {done}, "
            f"{report.get('remainingCount')} left; broker ready messages {report.get('brokerReadyMessages')}"]


dag = queue_dag(QueueProcedure(
    dag_id="drain_mail_queue",
    job="drain_mail_queue",
    report_type="drain-mail-queue",
    spark_task_id="detect_drain_verify",
    description="Mail queue: delete, move to a repository or hold the mails matching filters (dry run first)",
    doc_md=DOC,
    tags=("drain",),
    params={
        "dry_run": Param(True, type="boolean",
                         description="Count the matching mails and stop (the default): nothing is touched"),
        "queue": Param("spool", type="string", pattern=QUEUE_NAME_PATTERN,
                       description="The mail queue: spool (incoming processing), outgoing (remote delivery), ..."),
        **filter_params("enqueued"),
        "all_mails": Param(False, type="boolean",
                           description="No filter: act on every mail of the queue (James's clear)"),
        "action": Param("move", type="string", enum=["delete", "move", "hold"],
                        description="delete; move to the repository below; hold (deliver after hold_for)"),
        "repository": Param("cassandra://var/mail/drained/", type=["null", "string"], pattern=REPOSITORY_URL_PATTERN,
                            description="action move: the mail repository the mails go to"),
        "hold_for": Param(None, type=["null", "string"], pattern=DURATION_PATTERN,
                          description="action hold: how long the mails wait before delivery (e.g. 2h)"),
        **COMMON_PARAMS,
        "slices": SLICES,
    },
    job_args=job_args,
    validate=validate_params,
    summary=summary,
    live_checks=(mail_queue_exists("queue"),),
))
