"""The search reindex through spark-submit, on Cassandra + S3 + OpenSearch (issue 13).

300 real MIME messages appended through the mailbox manager (no indexing listener: the index is
built by the job's ``rebuildAll``), then the index is damaged the three ways production damages it:
documents lost, flags wrong in the index (a lost FlagsUpdated, or flags changed in Cassandra with
the listener down), documents of expunged messages left behind. ``fixOutdated`` must fix exactly
that (report counts equal the damage), leave an index equal to ``imapUidTable`` (ids, flags and
modseq compared), and a second run must find nothing. The index, aliases and keyspace are the
test's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from opensearchpy import helpers

from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.search.config import SearchConfig
from mailserver.search.index import ensure_index, make_client
from mailserver.search.listener import build_document
from mailserver.search.mapping import index_body
from spark_apps.common.search_reindex import COMPARED_FIELDS, document_signature, row_flags, signature
from tests.support.mail_projections import mailbox_context, seed_users
from tests.support.maintenance import report_of, spark_submit

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
    done = spark_submit(JOB, ["--cassandra-hosts", stack.cassandra_hosts, "--cassandra-port", str(stack.cassandra_port),
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


def test_rebuild_then_damage_then_fix_outdated_then_nothing(stack, spark_env, maintenance_keyspace, s3_blobs, search):
    session = maintenance_keyspace
    client = make_client(search, max_retries=3)
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_users(ctx, session, users=3, inbox_messages=80, archive_messages=20)
    assert len(truth(session)) == 300

    built = run(session, stack, s3_blobs, spark_env, search, "--mode", "rebuildAll", "--messages-per-second", "1000")
    assert built["type"] == "full-reindexing" and built["outcome"] == "COMPLETED"
    assert built["detected"] == {"missingDocument": 300}
    assert (built["indexedMessageCount"], built["failedMessageCount"], built["remaining"]) == (300, 0, {})
    assert built["runningOptions"]["messagesPerSecond"] == 1000.0
    assert indexed(client, search) == truth(session)
    # the very document the indexing listener writes
    user = seeded.users[0]
    message = ctx.manager.get_messages(seeded.inbox[user])[3]
    stored = client.get(index=search.read_alias, id=f"{message.mailbox_id}:{message.uid}",
                        routing=str(message.mailbox_id))["_source"]
    assert stored == build_document(message, ctx.manager.read_message(message.message_id), user,
                                    search.documents)

    # damage: 7 documents lost, 5 with wrong flags in the index, 3 with flags changed in Cassandra only,
    # 4 messages expunged whose documents stay
    inbox = {u: ctx.manager.get_messages(seeded.inbox[u]) for u in seeded.users}
    first, second, third = seeded.users
    lost = [f"{m.mailbox_id}:{m.uid}" for m in inbox[first][:7]]
    for doc_id in lost:
        client.delete(index=search.write_alias, id=doc_id, routing=doc_id.split(":")[0])
    for m in inbox[second][:5]:
        client.update(index=search.write_alias, id=f"{m.mailbox_id}:{m.uid}", routing=str(m.mailbox_id),
                      body={"doc": {"isFlagged": True, "userFlags": ["stale"]}})
    ctx.manager.set_flags(seeded.inbox[third], Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD,
                          uids=[m.uid for m in inbox[third][:3]])
    gone = [m.uid for m in inbox[third][10:14]]
    ctx.manager.set_flags(seeded.inbox[third], Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=gone)
    ctx.manager.expunge(seeded.inbox[third], uids=gone)
    assert len(truth(session)) == 296 and indexed(client, search) != truth(session)

    fixed = run(session, stack, s3_blobs, spark_env, search, "--mode", "fixOutdated")
    assert fixed["outcome"] == "COMPLETED", fixed
    assert fixed["detected"] == {"missingDocument": 7, "outdatedDocument": 8, "orphanDocument": 4}
    assert (fixed["indexedMessageCount"], fixed["fixedMessageCount"], fixed["deletedDocumentCount"],
            fixed["failedMessageCount"], fixed["processedMessageCount"]) == (7, 8, 4, 0, 19)
    assert fixed["scannedMessageCount"] == 296 and fixed["remaining"] == {}
    assert indexed(client, search) == truth(session)

    again = run(session, stack, s3_blobs, spark_env, search, "--mode", "fixOutdated")
    assert again["detected"] == {} and again["outcome"] == "COMPLETED"
    assert again["processedMessageCount"] == 0


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
