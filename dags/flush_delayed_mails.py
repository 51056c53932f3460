"""Flush a mail queue's delayed mails: every mail waiting out a delay is delivered now."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow.sdk import Param
from mailplatform.live import mail_queue_exists
from mailplatform.mail_queues import COMMON_PARAMS, QUEUE_NAME_PATTERN, QueueProcedure, common_job_args, queue_dag

DOC = """
### Flush delayed mails

**When.** Mails wait in a queue with a delay when remote delivery failed temporarily and will be
retried (`delayTime` of RemoteDelivery, on the `outgoing` queue), or when a drain put them on
hold. Once the cause is gone (the remote server answers again, the provider lifted its rate
limit, the hold is no longer needed), flush them instead of waiting out the delays. James's
WebAdmin route for this (`PATCH /mailQueues/{name}/mails?delayed=true`) does nothing on its
RabbitMQ queue, which ignores delays; this platform keeps delays in TTL queues and flushes them.

**Before running it.** `GET /mailQueues/{name}/mails?delayed=true` lists the delayed mails. Run
with `dry_run` first: the report counts them (`delayedMails`, `delayQueues` with each delay
queue's messages) and touches nothing.

**What this DAG does.**
1. `backends_healthy` waits for WebAdmin's Cassandra, RabbitMQ and object-storage checks, and
   `broker_healthy` for the broker of the `rabbitmq_management` connection.
2. `queue_drained` waits until the queue's work queue holds at most `max_queue_depth`
   messages, so the flushed mails do not pile onto a backlog.
3. `detect_flush_verify` (Spark for the view scan) counts the delayed mails, then moves every
   message of the queue's delay queues to its work queue (published, confirmed by the broker,
   then acknowledged), at most `rate` per second, and clears their due time in the view. It
   looks again: a mail delayed before the flush and still delayed is unresolved; mails delayed
   since (retries go on) are reported as `newSinceFlush`.
4. `report` shows `delayedMails`, `flushedMails`, the delay queues before and after, and the outcome.
5. `backends_healthy_after` checks the backends again.

**Good to know.** Safe to re-run: a flushed message is no longer in a delay queue. A remote
server still refusing mail makes the retries come back with their next delay.
"""


def job_args(params: Mapping[str, Any]) -> list[str]:
    return ["--queue", params["queue"], *common_job_args(params, slices=False)]


def summary(report: Mapping[str, Any]) -> list[str]:
    return [f"queue {report.get('mailQueueName')}: {report.get('delayedMails')} delayed mails, "
            f"{report.get('flushedMails')} flushed; delay queues before {report.get('delayQueues')}, "
            f"after {report.get('delayQueuesAfter')}"]


dag = queue_dag(QueueProcedure(
    dag_id="flush_delayed_mails",
    job="flush_delayed_mails",
    report_type="flush-delayed-mails",
    spark_task_id="detect_flush_verify",
    description="Mail queue: deliver the delayed mails now (the queue's flush)",
    doc_md=DOC,
    tags=("flush", "delays"),
    params={
        "dry_run": Param(False, type="boolean", description="Count the delayed mails and stop: nothing is moved"),
        "queue": Param("outgoing", type="string", pattern=QUEUE_NAME_PATTERN,
                       description="The mail queue (outgoing: where remote-delivery retries wait)"),
        "max_queue_depth": Param(10000, type="integer", minimum=0,
                                 description="Wait until the queue's work queue holds at most this many messages"),
        **COMMON_PARAMS,
    },
    job_args=job_args,
    gate_queue="{{ params.queue }}",
    summary=summary,
    live_checks=(mail_queue_exists("queue"),),
    run_note=False,   # no detect/repair report: its summary would read "fixed 0" (the flushed mails are flushedMails)
))
