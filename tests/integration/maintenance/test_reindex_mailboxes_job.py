"""The search reindex through spark-submit, on Cassandra + S3 + OpenSearch (issue 13).

Real MIME messages (600 by default, 120 per inbox; ``REINDEX_TEST_INBOX=400`` gives the issue's
2,000) appended through the mailbox manager (concurrently, one thread per mailbox) and indexed with
the indexing listener's document code, then the index is damaged the three ways production damages it:
documents lost, flags wrong in the index (a lost FlagsUpdated, or flags changed in Cassandra with
the listener down), documents of expunged messages left behind. ``fixOutdated`` must fix exactly
that (report counts equal the damage), leave an index equal to ``imapUidTable`` (ids, flags and
modseq compared), and a second run must find nothing. The index, aliases and keyspace are the
test's own. The rebuildAll mode is run by the DAG's e2e test and the benchmark; here two
spark-submits (the fix, then the run finding nothing), and one for the rerun of a failure list.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from opensearchpy import helpers

from mailserver.model.address import Username
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import MailboxPath
from mailserver.search.config import SearchConfig
from mailserver.search.index import bulk_index, ensure_index, make_client
from mailserver.search.listener import build_document
from mailserver.search.mapping import index_body
from spark_apps.common.reports import ReportLocation, write_report
from spark_apps.common.search_reindex import COMPARED_FIELDS, document_signature, row_flags, signature
from tests.support.mail_projections import SeededUsers, mailbox_context, register_user, seed_users
from tests.support.maintenance import report_of
from tests.support.mime_samples import sample
from tests.support.spark_in_process import run_job

pytestmark = [pytest.mark.integration, pytest.mark.spark]

JOB = "reindex_mailboxes"


@pytest.fixture
def search(stack) -> Iterator[SearchConfig]:
    tag = uuid.uuid4().hex[:10]
    config = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_reindex_{tag}",
                          read_alias=f"read_reindex_{tag}", write_alias=f"write_reindex_{tag}", shards=2, replicas=0,
                          state_index=f"state_reindex_{tag}")
    client = make_client(config, max_retries=3)
    ensure_index(client, config.index_name, index_body(2, 0), read_alias=config.read_alias,
                 write_alias=config.write_alias)
    yield config
    client.indices.delete(index=f"*{tag}*", ignore_unavailable=True, expand_wildcards="all")


def run(session, stack, blobs, spark_env, search: SearchConfig, *extra: str) -> dict:
    env = {**spark_env, "OPENSEARCH_URL": search.urls[0], "OPENSEARCH_ALIAS_READ_MAILBOX_NAME": search.read_alias,
           "OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME": search.write_alias}
    done = run_job(JOB, ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
                              "--keyspace", session.keyspace, "--blob-bucket", blobs.default_bucket.value,
                              "--slices", "2", *extra], env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-3000:]
    return report_of(done.stdout)


def truth(session) -> dict[str, str]:
    rows = session.execute("SELECT * FROM imapuidtable")
    return {f"{r['mailboxid']}:{r['uid']}": signature(row_flags(r), r["modseq"]) for r in rows}


def indexed(client, search: SearchConfig) -> dict[str, str]:
    client.indices.refresh(index=search.read_alias)
    return {hit["_id"]: document_signature(hit["_source"])
            for hit in helpers.scan(client, index=search.read_alias, query={"query": {"match_all": {}}},
                                    _source=COMPARED_FIELDS)}


def seed_concurrently(ctx, session, *, users: int, inbox_messages: int, archive_messages: int) -> SeededUsers:
    """``seed_users``' mail (real MIME through the mailbox manager: imapUidTable, messageV3, S3), one
    thread per mailbox so a few thousand messages take seconds instead of minutes."""
    tag = uuid.uuid4().hex[:6]
    seeded = SeededUsers()
    for u in range(users):
        user = Username.of(f"reidx{u}-{tag}@example.com")
        register_user(session, user)
        seeded.users.append(user)
        seeded.inbox[user], seeded.archive[user] = MailboxPath.inbox(user), MailboxPath.of(user, "Archive")
        ctx.manager.create_mailbox(seeded.inbox[user])
        ctx.manager.create_mailbox(seeded.archive[user])

    def fill(path: MailboxPath, count: int, offset: int) -> None:
        for n in range(count):
            ctx.manager.append(path, sample(n + offset))

    with ThreadPoolExecutor(max_workers=8) as pool:
        jobs = [pool.submit(fill, seeded.inbox[u], inbox_messages, 0) for u in seeded.users]
        jobs += [pool.submit(fill, seeded.archive[u], archive_messages, 100) for u in seeded.users]
        for job in jobs:
            job.result()
    return seeded


def index_as_the_listener(ctx, client, search: SearchConfig, seeded: SeededUsers) -> None:
    """Every message indexed with the indexing listener's own document code (no spark-submit needed)."""
    messages = [(m, user) for user in seeded.users for path in (seeded.inbox[user], seeded.archive[user])
                for m in ctx.manager.get_messages(path)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        documents = list(pool.map(lambda mu: build_document(mu[0], ctx.manager.read_message(mu[0].message_id),
                                                             mu[1], search.documents), messages))
    report = bulk_index(client, documents, write_alias=search.write_alias, refresh=True)
    assert not report.failures, report.failures


# Per user: INBOX messages in the inbox and a quarter of that in Archive, four users. The damage below
# needs 120 inbox messages per user; the seeding (about 0.1 s of CPU per append) is most of the test.
INBOX = int(os.environ.get("REINDEX_TEST_INBOX", "120"))
ARCHIVE = INBOX // 4
SEEDED = 4 * (INBOX + ARCHIVE)


def test_damaged_index_fixed_exactly_then_nothing(stack, spark_env, maintenance_keyspace, s3_blobs, search):
    session = maintenance_keyspace
    client = make_client(search, max_retries=3)
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_concurrently(ctx, session, users=4, inbox_messages=INBOX, archive_messages=ARCHIVE)
    assert len(truth(session)) == SEEDED
    index_as_the_listener(ctx, client, search, seeded)
    assert indexed(client, search) == truth(session)

    # damage: 60 documents lost, 40 with wrong flags in the index, 30 with flags changed in Cassandra
    # only (the listener down), 20 messages expunged whose documents stay
    inbox = {u: ctx.manager.get_messages(seeded.inbox[u]) for u in seeded.users}
    first, second, third, fourth = seeded.users
    lost = [f"{m.mailbox_id}:{m.uid}" for m in inbox[first][:60]]
    helpers.bulk(client, [{"_op_type": "delete", "_index": search.write_alias, "_id": doc_id,
                           "routing": doc_id.split(":")[0]} for doc_id in lost], refresh=True)
    helpers.bulk(client, [{"_op_type": "update", "_index": search.write_alias, "_id": f"{m.mailbox_id}:{m.uid}",
                           "routing": str(m.mailbox_id), "doc": {"isFlagged": True, "userFlags": ["stale"]}}
                          for m in inbox[second][:40]], refresh=True)
    ctx.manager.set_flags(seeded.inbox[third], Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD,
                          uids=[m.uid for m in inbox[third][:30]])
    gone = [m.uid for m in inbox[fourth][100:120]]
    ctx.manager.set_flags(seeded.inbox[fourth], Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=gone)
    ctx.manager.expunge(seeded.inbox[fourth], uids=gone)
    assert len(truth(session)) == SEEDED - 20 and indexed(client, search) != truth(session)

    fixed = run(session, stack, s3_blobs, spark_env, search, "--mode", "fixOutdated", "--slices", "4")
    assert fixed["type"] == "full-reindexing" and fixed["outcome"] == "COMPLETED", fixed
    assert fixed["detected"] == {"missingDocument": 60, "outdatedDocument": 70, "orphanDocument": 20}
    assert (fixed["indexedMessageCount"], fixed["fixedMessageCount"], fixed["deletedDocumentCount"],
            fixed["failedMessageCount"], fixed["processedMessageCount"]) == (60, 70, 20, 0, 150)
    assert (fixed["successfullyReprocessedMailCount"], fixed["failedReprocessedMailCount"]) == (150, 0)
    assert fixed["messageFailures"] == {} and fixed["mailboxFailures"] == []
    assert fixed["scannedMessageCount"] == SEEDED - 20 and fixed["remaining"] == {}
    assert indexed(client, search) == truth(session)
    # a document the job wrote is the very document the indexing listener writes
    message = inbox[first][3]
    stored = client.get(index=search.read_alias, id=f"{message.mailbox_id}:{message.uid}",
                        routing=str(message.mailbox_id))["_source"]
    assert stored == build_document(message, ctx.manager.read_message(message.message_id), first,
                                    search.documents)

    again = run(session, stack, s3_blobs, spark_env, search, "--mode", "fixOutdated")
    assert again["detected"] == {} and again["outcome"] == "COMPLETED"
    assert again["processedMessageCount"] == 0


def test_rerun_of_a_previous_runs_failures_reindexes_exactly_those(stack, spark_env, maintenance_keyspace,
                                                                     s3_blobs, search):
    """James's reIndexFailedMessagesOf: the previous run's report (in S3, where the job writes it) lists two
    messages, one document whose message is gone, and one whole mailbox; the rerun touches those only."""
    session = maintenance_keyspace
    client = make_client(search, max_retries=3)
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_users(ctx, session, users=1, inbox_messages=6, archive_messages=3)
    user = seeded.users[0]
    inbox, archive = ctx.manager.get_messages(seeded.inbox[user]), ctx.manager.get_messages(seeded.archive[user])
    # not listed, and out of date in the index: must stay as it is
    untouched = inbox[0]
    stale = {**build_document(untouched, ctx.manager.read_message(untouched.message_id), user, search.documents),
             "isFlagged": True}
    bulk_index(client, [stale], write_alias=search.write_alias, refresh=True)
    inbox_id, archive_id = str(inbox[0].mailbox_id), str(archive[0].mailbox_id)
    previous_key = f"reindex_mailboxes/webadmin__{uuid.uuid4()}"
    write_report({"type": "full-reindexing", "outcome": "PARTIAL", "failedReprocessedMailCount": 3,
                  "messageFailures": {inbox_id: [{"uid": inbox[2].uid}, {"uid": inbox[4].uid}, {"uid": 99}]},
                  "mailboxFailures": [archive_id]},
                 ReportLocation.for_run("full-reindexing", previous_key))
    client.index(index=search.write_alias, id=f"{inbox_id}:99", routing=inbox_id, refresh=True,
                 body={**stale, "uid": 99})   # listed, but its message is gone: deleted

    report = run(session, stack, s3_blobs, spark_env, search, "--mode", "rebuildAll", "--failures-of", previous_key)
    assert report["type"] == "error-recovery-indexation" and report["outcome"] == "COMPLETED", report
    assert report["detected"] == {"missingDocument": 5, "orphanDocument": 1}
    assert (report["indexedMessageCount"], report["deletedDocumentCount"], report["failedReprocessedMailCount"],
            report["successfullyReprocessedMailCount"]) == (5, 1, 0, 6)
    assert report["runningOptions"]["failuresOf"] == previous_key
    expected = {f"{m.mailbox_id}:{m.uid}" for m in (inbox[2], inbox[4], *archive)} | {f"{inbox_id}:{untouched.uid}"}
    now = indexed(client, search)
    assert set(now) == expected
    assert now[f"{inbox_id}:{untouched.uid}"] != truth(session)[f"{inbox_id}:{untouched.uid}"]   # not in scope


def test_one_message_scope_touches_that_document_only(stack, spark_env, maintenance_keyspace, s3_blobs, search):
    session = maintenance_keyspace
    client = make_client(search, max_retries=3)
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_users(ctx, session, users=1, inbox_messages=5, archive_messages=0)
    messages = ctx.manager.get_messages(seeded.inbox[seeded.users[0]])
    target = messages[2]
    report = run(session, stack, s3_blobs, spark_env, search, "--mode", "fixOutdated",
                 "--mailbox-id", str(target.mailbox_id), "--uid", str(target.uid))
    assert report["type"] == "message-reindexing" and report["detected"] == {"missingDocument": 1}
    assert report["indexedMessageCount"] == 1 and report["runningOptions"]["uid"] == target.uid
    assert set(indexed(client, search)) == {f"{target.mailbox_id}:{target.uid}"}
