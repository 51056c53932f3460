"""The drain (action hold) and flush Spark jobs through spark-submit, on RabbitMQ (a vhost of its own), Cassandra
and S3. The drain's move, the recovery and the reprocessing are shown through Airflow with a real mail server in
``tests/e2e/maintenance/test_mail_queue_dags.py``.

30 mails on a queue, 10 from one sender: a hold of that sender's mails for an hour leaves the 20 others due and
the 10 held ones delayed (each under one new enqueueId, the original marked deleted: its broker message is
skipped; a drain again would not select them: tests/unit/spark_apps/test_mail_queue_jobs.py); the flush counts the 10
delayed mails, makes them due at once, and every mail is dequeued exactly once.
"""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from mailserver.queue.api import Outcome
from mailserver.queue.rabbitmq import DistributedMailQueueFactory
from tests.support.mail_queue_maintenance import (
    enqueue_many,
    make_mail,
    ready_messages,
    spark_submit_queue_job,
    view_rows,
)
from tests.support.mailserver_process import IsolatedVhost

pytestmark = [pytest.mark.integration, pytest.mark.spark]

SPAMMER = "bulk@spam.example"


@pytest.fixture
def queue_world(stack, maintenance_keyspace, s3_blobs):
    with IsolatedVhost(stack, f"queuejobs-{uuid.uuid4().hex[:8]}") as vhost:
        factory = DistributedMailQueueFactory(vhost.amqp_url, maintenance_keyspace, s3_blobs,
                                              management_url=stack.rabbitmq_management_url)
        try:
            yield vhost, factory
        finally:
            factory.close()


def job_env(spark_env, vhost, stack) -> dict[str, str]:
    return {**spark_env, "AMQP_URL": vhost.amqp_url, "RABBITMQ_MANAGEMENT_URL": stack.rabbitmq_management_url}


def common(stack, session, s3_blobs) -> list[str]:
    return ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
            "--keyspace", session.keyspace, "--blob-bucket", str(s3_blobs.default_bucket)]


def drain_all(queue, timeout=5.0) -> Counter:
    names = Counter()
    while (item := queue.dequeue(timeout=timeout)) is not None:
        names[item.mail.name] += 1
        item.done(Outcome.SUCCESS)
    return names


def test_hold_then_flush(stack, spark_env, maintenance_keyspace, s3_blobs, queue_world):
    vhost, factory = queue_world
    queue = factory.get(f"q-{uuid.uuid4().hex[:8]}")
    spam = [make_mail(SPAMMER, f"user{i}@local.test", f"spam {i}") for i in range(10)]
    ham = [make_mail(f"friend{i}@remote.example", f"user{i}@local.test", f"ham {i}") for i in range(20)]
    enqueue_many(queue, [*spam, *ham])
    env = job_env(spark_env, vhost, stack)
    args = [*common(stack, maintenance_keyspace, s3_blobs), "--queue", queue.name]

    run = spark_submit_queue_job("drain_mail_queue", [*args, "--action", "hold", "--hold-for", "1h",
                                                      "--sender", SPAMMER, "--slices", "2"], env)
    assert run.returncode == 0, run.stderr[-4000:]
    report = run.report()
    assert report["outcome"] == "COMPLETED" and report["type"] == "drain-mail-queue"
    assert report["detected"] == {"matchingMail": 10} and report["heldMails"] == 10
    assert (report["initialCount"], report["remainingCount"]) == (30, 30)   # held mails stay in the queue
    assert report["unresolved"] == 0 and report["errors"] == []
    rows = view_rows(maintenance_keyspace, queue.name)
    live = [r for r in rows.values() if not r["deleted"]]
    assert len(rows) == 40 and len(live) == 30                     # 10 originals marked deleted, 10 held copies
    held = [r for r in live if "mailserver.queue.nextDelivery" in (r["attributes"] or {})]
    assert sorted(r["name"] for r in held) == sorted(m.name for m in spam)
    assert ready_messages(vhost.amqp_url, queue.names.workqueue) == 30   # 20 due + 10 originals to be skipped
    assert ready_messages(vhost.amqp_url, queue.names.delay_queue(3_600_000)) == 10
    browse = {v.mail.name: v.next_delivery for v in queue.browse()}
    assert sum(1 for due in browse.values() if due is not None) == 10 and len(browse) == 30

    run = spark_submit_queue_job("flush_delayed_mails", [*args, "--rate", "50"], env)
    assert run.returncode == 0, run.stderr[-4000:]
    report = run.report()
    assert report["outcome"] == "COMPLETED" and report["flushedMails"] == 10 and report["delayedMails"] == 10
    assert report["delayQueues"] == {queue.names.delay_queue(3_600_000): 10}
    assert report["remaining"] == {} and report["unresolved"] == 0
    assert report["delayQueuesAfter"] == {queue.names.delay_queue(3_600_000): 0}
    delivered = drain_all(queue)
    assert delivered == Counter({m.name: 1 for m in [*spam, *ham]})   # each mail once, the skipped originals not
    assert ready_messages(vhost.amqp_url, queue.names.workqueue) == 0
