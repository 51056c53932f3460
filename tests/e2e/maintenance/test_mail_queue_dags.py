"""The mail-queue DAGs run by Airflow (``dag.test()``) on a mail world of their own: the maintenance keyspace, a
RabbitMQ vhost and a bucket, local users, the server's spool, and mail servers (``--roles spooler,webadmin``)
started when delivery resumes. What each DAG did is read back with CQL, the management API and S3.

* dry runs: one world with something for each of the four DAGs (a spam wave, mails the broker lost, orphaned
  blobs, delayed mails, a mail repository); each DAG's dry run finds its part and leaves every table of the
  keyspace, the world's bucket, every queue of the vhost and the maintenance state as they were;
* drain: a spam wave in the spool while delivery is stopped. The drain moves them to ``var/mail/drained/``
  (view, broker and blobs agree); once delivery restarts every other mail is delivered exactly once and no
  spam is;
* recovery: the spool's broker messages purged behind the platform's back, and content blobs left by enqueues
  that crashed between S3 and Cassandra. ``recover_lost_mails`` republishes every mail the view holds and
  re-enqueues the whole orphaned mails (the ambiguous ones are reported and kept); after delivery each mail is
  in its INBOX exactly once, and a second run finds nothing;
* hold then flush: a sender's mails put on hold for an hour by the drain (each enqueued again with its due time,
  the original marked deleted), then flushed by ``flush_delayed_mails`` (the delay queue emptied into the work
  queue, the due times cleared in the view): every mail is delivered once, well within the hour;
* reprocessing: mails to users that did not exist yet are in ``var/mail/address-error/``; once the users are
  created, ``reprocess_mail_repository`` sends them through ``transport`` again: each delivered once, the
  repository empty, the report's counts equal.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from datetime import timedelta

import pytest

from mailserver.cassandra.versions import LATEST, SchemaVersionDAO
from mailserver.domains.cassandra import CassandraDomainList
from mailserver.queue.content import MimeMessageStore
from mailserver.repository.cassandra import CassandraMailRepositoryStore
from spark_apps.common.mail_queues import ready_count
from spark_apps.common.reports import s3_client
from tests.e2e.maintenance.conftest import run_dag, webadmin_get
from tests.support.events import eventually
from tests.support.mail_queue_maintenance import (
    QueueWorld,
    delivered_subjects,
    enqueue_many,
    inbox_headers,
    live_names,
    make_mail,
    purge,
    raw_mail,
    repository_rows,
    view_rows,
)
from tests.support.mailserver_process import IsolatedVhost, mailet_container_for_tests
from tests.support.world_snapshot import RunRecord, World, differences

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

# The procedures' target figures are 5,000 mails in the spool and 2,000 to recover or reprocess; the
# suite runs a twentieth (still several slices and a hundred mails per run, in its time budget). Set
# MAIL_QUEUE_E2E_SCALE=1 for the full figures.
SCALE = float(os.environ.get("MAIL_QUEUE_E2E_SCALE", "0.05"))
SPAM, HAM = int(2000 * SCALE), int(3000 * SCALE)
LOST = REPROCESSED = int(2000 * SCALE)
HELD, DUE = 6, 4   # the hold and the flush are the point, not the volume
BULK = "news@bulk.example"
USERS = 20
SPAMMER = "wave@spam.example"
DRAINED = "cassandra://var/mail/drained/"
ADDRESS_ERROR = "cassandra://var/mail/address-error/"
DELIVERY_WAIT = 600


@pytest.fixture
def queue_world(stack, maintenance_airflow, maintenance_keyspace, tmp_path, monkeypatch):
    tag = uuid.uuid4().hex[:8]
    session = maintenance_keyspace
    SchemaVersionDAO(session, session.keyspace).update_version(LATEST)   # the truncated keyspace is current
    domain = f"q15-{tag}.test"
    CassandraDomainList(session).add(domain)
    container = mailet_container_for_tests(tmp_path / "mailetcontainer.yaml")
    with IsolatedVhost(stack, f"q15-{tag}") as vhost:
        world = QueueWorld(stack, session, vhost.amqp_url, vhost.name, f"q15-{tag}", container, tmp_path, domain, [])
        monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", world.management_conn())
        try:
            yield world
        finally:
            world.stop_servers()
            blobs = world.blobs
            blobs.delete_bucket(blobs.default_bucket)


def delivered(world: QueueWorld, users: list[str], expected: int) -> Counter:
    """Once the spool is empty (view and broker), the subjects in the users' INBOXes."""
    def spool_done() -> bool:
        return (not live_names(world.session, "spool")
                and ready_count(world.amqp_url, "JamesMailQueue-workqueue-spool") == 0)
    eventually(spool_done, timeout=DELIVERY_WAIT, interval=1)   # raises when the spool is not emptied

    def counted() -> int:
        return sum(len(h) for h in inbox_headers(world.session, users).values())
    eventually(lambda: counted() >= expected, timeout=60, interval=1)
    time.sleep(1)   # a duplicate would show up now
    return delivered_subjects(world, users)


def test_each_dry_run_finds_its_part_and_leaves_tables_bucket_queues_and_maintenance_as_they_were(
        queue_world, maintenance_webadmin):
    world = queue_world
    users = world.add_users([f"user{i}" for i in range(4)])
    spool = world.factory().get("spool")
    lost = [make_mail("friend@remote.example", users[i % 4], f"lost {i}") for i in range(4)]
    enqueue_many(spool, lost)
    assert purge(world.amqp_url, spool.names.workqueue) == len(lost)   # behind the platform's back
    spam = [make_mail(SPAMMER, users[i % 4], f"spam {i}") for i in range(5)]
    enqueue_many(spool, [*spam, *(make_mail("friend@remote.example", users[i], f"ham {i}") for i in range(4))])
    for i in range(3):
        spool.enqueue(make_mail(BULK, users[i], f"later {i}"), delay=timedelta(hours=1))
    store = MimeMessageStore(world.blobs)
    orphans = [orphan(world, store, users[i], f"orphan {i}", multipart=True) for i in range(2)]
    repository = CassandraMailRepositoryStore(world.session, store).select(ADDRESS_ERROR)
    stored = [repository.store(make_mail("friend@remote.example", world.address(f"later{i}"), f"early {i}"))
              for i in range(3)]
    report_bucket = os.environ.get("MAINTENANCE_REPORT_BUCKET", "maintenance-reports")
    snapshot = World(session=world.session, s3_client=s3_client(world.stack.to_env()),
                     buckets=lambda name: name == world.bucket, amqp_url=world.amqp_url,
                     management_url=world.stack.rabbitmq_management_url.rstrip("/"),
                     maintenance_state=lambda: webadmin_get(maintenance_webadmin, "/maintenance"))
    bucket = {"blob_bucket": world.bucket}
    runs = {   # each DAG's dry run, and what it must find
        "drain_mail_queue": ({**bucket, "sender": SPAMMER}, {"matchingMail": len(spam)}),
        "recover_lost_mails": ({**bucket, "dry_run": True, "older_than": "0s", "orphan_min_age": "0s"},
                               {"notInBroker": len(lost), "orphanMail": len(orphans)}),
        "flush_delayed_mails": ({**bucket, "dry_run": True, "queue": "spool"}, {"delayedMails": 3}),
        "reprocess_mail_repository": ({**bucket, "dry_run": True, "repository": ADDRESS_ERROR,
                                       "target_processor": "transport"}, {"storedMail": len(stored)}),
    }
    for dag_id, (conf, found) in runs.items():
        before = snapshot.snapshot()
        run, states, summary = run_dag(dag_id, conf)
        assert run.state == "success", (dag_id, states)
        assert summary["outcome"] == "DRY_RUN" and summary["detected"] == found, (dag_id, summary)
        after = snapshot.snapshot(RunRecord(dag_id, run.run_id, report_bucket))
        assert differences(before, after) == [], dag_id


def test_drain_moves_a_spam_wave_to_a_repository_and_the_rest_is_delivered_once(queue_world):
    world = queue_world
    users = world.add_users([f"user{i}" for i in range(USERS)])
    spool = world.factory().get("spool")
    spam = [make_mail(SPAMMER, users[i % USERS], f"spam {i}") for i in range(SPAM)]
    ham = [make_mail(f"friend{i % 7}@remote.example", users[i % USERS], f"ham {i}") for i in range(HAM)]
    enqueue_many(spool, [m for pair in zip(ham, spam, strict=False) for m in pair] + ham[len(spam):])
    total = SPAM + HAM
    assert ready_count(world.amqp_url, spool.names.workqueue) == total

    run, states, summary = run_dag("drain_mail_queue", {"dry_run": False, "sender": SPAMMER, "slices": 4,
                                                        "rate": 5000, "blob_bucket": world.bucket})
    assert run.state == "success", states
    assert set(states.values()) == {"success"} and "backends_healthy_after" in states
    assert summary["outcome"] == "COMPLETED" and summary["detected"] == {"matchingMail": SPAM}
    assert (summary["initialCount"], summary["movedMails"], summary["remainingCount"]) == (total, SPAM, HAM)
    assert summary["unresolved"] == 0 and summary["remaining"] == {}
    # the view: the spam is marked deleted, the rest still listed (CQL)
    assert live_names(world.session, "spool") == Counter({m.name: 1 for m in ham})
    rows = view_rows(world.session, "spool")
    assert {r["name"] for r in rows.values() if r["deleted"]} == {m.name for m in spam}
    # the repository holds the spam, with its content in the bucket (CQL + S3)
    stored = repository_rows(world.session, DRAINED)
    assert set(stored) == {m.name for m in spam}
    keys = world.bucket_keys()
    assert all(r["headerblobid"] in keys and r["bodyblobid"] in keys for r in stored.values())
    assert all(r["state"] == "root" and r["sender"] == SPAMMER for r in stored.values())
    # the broker still holds every message: the removed ones are skipped when a spooler reaches them (James)
    assert summary["brokerReadyMessages"] == total
    eventually(lambda: world.management_depth(spool.names.workqueue) == total, timeout=30, interval=1)

    world.start_delivery()
    subjects = delivered(world, users, HAM)
    assert subjects == Counter({f"ham {i}": 1 for i in range(HAM)})   # each once, no spam
    eventually(lambda: world.management_depth(spool.names.workqueue) == 0, timeout=30, interval=1)
    assert set(repository_rows(world.session, DRAINED)) == {m.name for m in spam}   # kept for review


def orphan(world: QueueWorld, store: MimeMessageStore, rcpt: str, subject: str, *, multipart: bool,
           intake: bool = True) -> tuple[str, str]:
    """What an enqueue that crashed between S3 and Cassandra leaves: the two blobs, referenced by nothing."""
    token = uuid.uuid4().hex
    raw = raw_mail("someone@remote.example", rcpt, subject, intake=intake, token=token)
    if multipart:
        header, body = raw.split(b"\r\n\r\n", 1)
        boundary = f"b-{token}"
        raw = (header + f"\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"{boundary}\"\r\n\r\n"
               f"--{boundary}\r\nContent-Type: text/plain\r\n\r\n".encode() + body + f"--{boundary}--\r\n".encode())
    content = store.save(raw)
    return content.header_blob_id, content.body_blob_id


def test_recover_republishes_what_the_broker_lost_and_reenqueues_whole_orphaned_mails(queue_world):
    world = queue_world
    users = world.add_users([f"user{i}" for i in range(USERS)])
    spool = world.factory().get("spool")
    lost = [make_mail(f"friend{i % 5}@remote.example", users[i % USERS], f"lost {i}") for i in range(LOST)]
    enqueue_many(spool, lost)
    assert purge(world.amqp_url, spool.names.workqueue) == LOST          # behind the platform's back
    store = MimeMessageStore(world.blobs)
    whole = [orphan(world, store, users[i], f"orphan {i}", multipart=True) for i in range(8)]   # one burst
    ambiguous = [orphan(world, store, users[8], "twin 1", multipart=False),
                 orphan(world, store, users[9], "twin 2", multipart=False),
                 orphan(world, store, users[10], "draft", multipart=False, intake=False)]
    time.sleep(3)
    whole.append(orphan(world, store, users[11], "orphan alone", multipart=False))   # written apart: pairs by time

    run, states, summary = run_dag("recover_lost_mails", {"older_than": "0s", "orphan_min_age": "0s",
                                                          "blob_bucket": world.bucket, "slices": 2})
    assert run.state == "success", states
    assert summary["outcome"] == "COMPLETED", summary
    assert summary["detected"] == {"notInBroker": LOST, "orphanMail": len(whole)}
    republish, orphans = summary["republish"], summary["orphans"]
    assert (republish["notInBroker"], republish["republished"], republish["brokerMessagesRead"]) == (LOST, LOST, 0)
    assert len(republish["notInBrokerSample"]) == min(20, LOST)
    assert (orphans["unreferencedBlobs"], orphans["wholeMails"], orphans["recovered"]) == (
        2 * (len(whole) + len(ambiguous)), len(whole), len(whole))
    assert orphans["ambiguousOrphans"] == 2 * len(ambiguous)
    assert {a["blobId"] for a in orphans["ambiguousSample"]} == {b for pair in ambiguous for b in pair}
    assert summary["browseStart"]["spool"]["moved"] is False   # its oldest mail is in the current slice
    assert ready_count(world.amqp_url, spool.names.workqueue) == LOST + len(whole)

    world.start_delivery()
    subjects = delivered(world, users, LOST + len(whole))
    expected = Counter({f"lost {i}": 1 for i in range(LOST)})
    expected.update({f"orphan {i}": 1 for i in range(8)} | {"orphan alone": 1})
    assert subjects == expected                                          # each once; twins and draft not sent
    keys = world.bucket_keys()
    assert all(h in keys and b in keys for h, b in ambiguous)            # nothing deleted

    run, states, summary = run_dag("recover_lost_mails", {"older_than": "0s", "orphan_min_age": "0s",
                                                          "blob_bucket": world.bucket})
    assert run.state == "success", states
    assert summary["detected"] == {} and summary["nbRequeuedMails"] == 0 and summary["orphans"]["recovered"] == 0


def test_hold_then_flush_delivers_each_mail_once_within_the_hour(queue_world):
    world = queue_world
    users = world.add_users([f"user{i}" for i in range(HELD)])
    spool = world.factory().get("spool")
    held = [make_mail(BULK, users[i], f"held {i}") for i in range(HELD)]
    due = [make_mail(f"friend{i}@remote.example", users[i], f"due {i}") for i in range(DUE)]
    enqueue_many(spool, [*held, *due])
    total, delay_queue = HELD + DUE, spool.names.delay_queue(3_600_000)

    run, states, summary = run_dag("drain_mail_queue", {"dry_run": False, "action": "hold", "hold_for": "1h",
                                                        "sender": BULK, "slices": 2, "blob_bucket": world.bucket})
    assert run.state == "success", states
    assert summary["outcome"] == "COMPLETED" and summary["detected"] == {"matchingMail": HELD}
    assert (summary["heldMails"], summary["initialCount"], summary["remainingCount"]) == (HELD, total, total)
    assert summary["unresolved"] == 0            # and no failed item: the outcome would be PARTIAL
    # each held mail is enqueued again under a new enqueueId with its due time; the original is marked deleted
    rows = view_rows(world.session, "spool")
    live = [r for r in rows.values() if not r["deleted"]]
    assert (len(rows), len(live)) == (total + HELD, total)
    assert sorted(r["name"] for r in live if "mailserver.queue.nextDelivery" in (r["attributes"] or {})) == \
        sorted(m.name for m in held)
    # the broker: the originals wait in the work queue to be skipped, the copies in the hour's delay queue
    assert (ready_count(world.amqp_url, spool.names.workqueue), ready_count(world.amqp_url, delay_queue)) == (
        total, HELD)
    assert sum(1 for v in spool.browse() if v.next_delivery is not None) == HELD

    run, states, summary = run_dag("flush_delayed_mails", {"queue": "spool", "blob_bucket": world.bucket})
    assert run.state == "success", states
    assert set(states.values()) == {"success"} and "queue_drained" in states and "backends_healthy_after" in states
    assert summary["outcome"] == "COMPLETED", summary
    assert (summary["delayedMails"], summary["flushedMails"], summary["unresolved"]) == (HELD, HELD, 0)
    assert summary["remaining"] == {}
    assert (summary["delayQueues"], summary["delayQueuesAfter"]) == ({delay_queue: HELD}, {delay_queue: 0})
    assert ready_count(world.amqp_url, spool.names.workqueue) == total + HELD
    assert [v.next_delivery for v in spool.browse()] == [None] * total   # due times cleared in the view

    world.start_delivery()
    subjects = delivered(world, users, total)
    expected = Counter({f"held {i}": 1 for i in range(HELD)}) + Counter({f"due {i}": 1 for i in range(DUE)})
    assert subjects == expected                  # an hour early, each once: the held originals were skipped
    eventually(lambda: world.management_depth(spool.names.workqueue) == 0, timeout=30, interval=1)


def test_reprocess_address_errors_once_the_users_exist(queue_world):
    world = queue_world
    missing = [world.address(f"newcomer{i}") for i in range(USERS)]
    spool = world.factory().get("spool")
    mails = [make_mail(f"friend{i % 5}@remote.example", missing[i % USERS], f"early {i}") for i in range(REPROCESSED)]
    enqueue_many(spool, mails)
    world.start_delivery()
    eventually(lambda: len(repository_rows(world.session, ADDRESS_ERROR)) == REPROCESSED, timeout=DELIVERY_WAIT,
               interval=1)
    assert not any(delivered_subjects(world, missing).values())

    world.add_users([f"newcomer{i}" for i in range(USERS)])            # the cause is fixed
    run, states, summary = run_dag("reprocess_mail_repository", {
        "repository": ADDRESS_ERROR, "target_processor": "transport", "blob_bucket": world.bucket, "slices": 2})
    assert run.state == "success", states
    assert summary["outcome"] == "COMPLETED" and summary["repositoryPath"] == "var/mail/address-error/"
    assert summary["detected"] == {"storedMail": REPROCESSED}
    assert summary["initialCount"] == summary["reprocessedMails"] == REPROCESSED
    assert (summary["remainingCount"], summary["unresolved"], summary["targetProcessor"]) == (0, 0, "transport")
    subjects = delivered(world, missing, REPROCESSED)
    assert subjects == Counter({f"early {i}": 1 for i in range(REPROCESSED)})
    assert repository_rows(world.session, ADDRESS_ERROR) == {}
