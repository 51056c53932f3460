"""Recover lost mails: republish what RabbitMQ lost, re-enqueue orphaned content, move the browse start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import mail_queue_exists
from mailplatform.mail_queues import (
    COMMON_PARAMS,
    DURATION_PATTERN,
    QUEUE_NAME_PATTERN,
    SLICES,
    QueueProcedure,
    common_job_args,
    queue_dag,
)

DOC = """
### Recover lost mails

**When.** A mail accepted by SMTP is durable in three places: its content in the object store,
its row in the Cassandra browse view, its message in RabbitMQ. Run this after an incident broke
that chain:
* RabbitMQ lost messages (a node lost its disk, a queue was purged or deleted and declared
  again): the view still lists the mails but nothing delivers them. This is James's
  `RepublishNotProcessedMails` (`POST /mailQueues/{name}?action=RepublishNotProcessedMails&olderThan=1d`);
* a process crashed between writing the content and enqueuing it (the mail was never
  acknowledged to the client, which usually retried, but not always): content blobs nothing
  references. Like an archiver's orphaned queue items moved to a "restore" folder and processed
  at the next start, the whole mails among them are enqueued again;
* the browse start is stuck far in the past (`RabbitMQMailQueue BrowseStart` health check
  degraded): James's `updateBrowseStart`.

**Before running it.** Make sure the broker is back (`broker_healthy` checks it). Run with
`dry_run` first: the report shows each step's counts and sample ids and nothing is written.

**What this DAG does.** Nothing is deleted by it.
1. `backends_healthy` (WebAdmin's Cassandra, RabbitMQ, object storage) and `broker_healthy`.
2. `detect_recover_verify` (Spark, `cassandra_maintenance` pool):
   1. **republish**: the live mails of the browse view (every queue, or `queue`) enqueued more
      than `older_than` ago whose enqueueId is in none of the queue's RabbitMQ queues (work and
      delay queues are read without acknowledging anything: every message goes back, and
      consumers wait meanwhile) are published again under the same enqueueId. With
      `check_broker` off, every such mail is republished as James does (a mail still in the
      broker is then queued twice). Keep `older_than` above the longest time a mail takes to be
      processed: a mail held by a consumer is not in the broker either;
   2. **orphan content** (`scan_orphans`): the blobs of the mail bucket written after every
      queue's oldest kept slice, at least `orphan_min_age` and at most `orphan_max_age` ago,
      that no queue row, repository mail, mailbox message or attachment references. A header
      blob and a body blob that pair without doubt (MIME boundary, or written together), whose
      topmost Received field is this server's SMTP intake (`intake_signature`) dated in the
      window, with a recipient, are enqueued on `target_queue` (envelope: the intake's
      `for <...>`, else To/Cc/Bcc; sender: Return-Path, else From). The others are listed with
      the reason (`orphans.ambiguousSample`) for an operator to look at;
   3. **browse start** (`move_browse_start`): each queue's browse start moves to the slice of
      its oldest live mail, and the slices before it are cleaned up (ADR 0032).
   Detection runs again: a republished mail not seen in the broker is counted in flight, not
   unresolved.
3. `report` prints each step (`republish`, `orphans`, `browseStart`) with counts and sample ids.
4. `backends_healthy_after` checks the backends again.

**Good to know.** Safe to re-run: a republished mail is in the broker, a recovered one is
referenced; a second run finds nothing. Delivery is at least once: a mail whose message was not
really lost (or is being processed) may be delivered twice (local delivery keeps one copy per
mail and recipient). A recovered mail lost its SMTP authentication: mail for remote recipients
from an authenticated sender lands in `relay-denied`, to be reviewed and reprocessed.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    args = ["--older-than", params["older_than"], "--target-queue", params["target_queue"],
            "--orphan-min-age", params["orphan_min_age"], "--orphan-max-age", params["orphan_max_age"],
            "--intake-signature", params["intake_signature"]]
    if params.get("queue"):
        args += ["--queue", params["queue"]]
    if not params["check_broker"]:
        args.append("--no-broker-check")
    if not params["scan_orphans"]:
        args.append("--no-orphans")
    if not params["move_browse_start"]:
        args.append("--no-browse-start")
    return [*args, *common_job_args(params)]


def summary(report: Mapping[str, Any]) -> list[str]:
    lines = []
    republish = report.get("republish") or {}
    lines.append(f"republish: {republish.get('liveMailsInView')} live mails in the view, "
                 f"{republish.get('brokerMessagesRead')} broker messages read, {republish.get('notInBroker')} not in "
                 f"the broker, {republish.get('republished')} republished "
                 f"(sample {republish.get('notInBrokerSample')})")
    orphans = report.get("orphans")
    if orphans:
        lines.append(f"orphans: {orphans.get('blobsScanned')} blobs, {orphans.get('unreferencedBlobs')} unreferenced, "
                     f"{orphans.get('wholeMails')} whole mails, {orphans.get('recovered')} recovered, "
                     f"{orphans.get('ambiguousOrphans')} left alone {orphans.get('ambiguousReasons')}")
    for queue, step in sorted((report.get("browseStart") or {}).items()):
        lines.append(f"browse start of {queue}: {step}")
    return lines


dag = queue_dag(QueueProcedure(
    dag_id="recover_lost_mails",
    job="recover_lost_mails",
    report_type="recover-lost-mails",
    spark_task_id="detect_recover_verify",
    description="Mail queues: republish what RabbitMQ lost, re-enqueue orphaned content, move the browse start",
    doc_md=DOC,
    tags=("recovery", "republish"),
    params={
        "dry_run": Param(False, type="boolean", description="Report each step and stop: nothing is written"),
        "queue": Param(None, type=["null", "string"], pattern=QUEUE_NAME_PATTERN,
                       description="One mail queue (empty: every queue of the browse view)"),
        "older_than": Param("1h", type="string", pattern=DURATION_PATTERN,
                            description="Republish only mails enqueued longer ago than this (James's olderThan)"),
        "check_broker": Param(True, type="boolean",
                              description="Republish only what the broker does not hold (off: James's behaviour)"),
        "scan_orphans": Param(True, type="boolean", description="Look for content blobs nothing references"),
        "orphan_min_age": Param("15m", type="string", pattern=DURATION_PATTERN,
                                description="Leave blobs younger than this alone (enqueues in flight)"),
        "orphan_max_age": Param("7d", type="string", pattern=DURATION_PATTERN,
                                description="Look at blobs younger than this only"),
        "target_queue": Param("spool", type="string", pattern=QUEUE_NAME_PATTERN,
                              description="Where recovered whole mails are enqueued"),
        "intake_signature": Param("JAMES SMTP Server", type="string", minLength=1,
                                  description="What this server's SMTP intake writes in Received (its software name)"),
        "move_browse_start": Param(True, type="boolean", description="Move each queue's browse start (step 3)"),
        **COMMON_PARAMS,
        "slices": SLICES,
    },
    job_args=job_args,
    summary=summary,
    live_checks=(mail_queue_exists("queue"), mail_queue_exists("target_queue")),
))
