"""The reindex DAG run by Airflow (``dag.test()``): health gate, Spark reading Cassandra and S3 and
writing OpenSearch through the write alias, report.

Mail appended through the mailbox manager with no indexing listener; the DAG builds the index
(rebuildAll), the test damages it (documents lost, flags changed with the listener down, messages
expunged), fixOutdated fixes exactly that, and its verify pass finds nothing left. The dry run of
rebuildAll is checked in test_dry_runs_write_nothing.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.search.config import SearchConfig
from mailserver.search.index import ensure_index, make_client
from mailserver.search.mapping import index_body
from tests.e2e.maintenance.conftest import assert_refused, run_dag
from tests.integration.maintenance.test_reindex_mailboxes_job import indexed, truth
from tests.support.mail_projections import mailbox_context, seed_users

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "reindex_mailboxes"


@pytest.fixture
def search(stack) -> Iterator[SearchConfig]:
    tag = uuid.uuid4().hex[:10]
    config = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_reindex_dag_{tag}",
                          read_alias=f"read_reindex_dag_{tag}", write_alias=f"write_reindex_dag_{tag}")
    client = make_client(config, max_retries=3)
    ensure_index(client, config.index_name, index_body(1, 0), read_alias=config.read_alias,
                 write_alias=config.write_alias)
    yield config
    client.indices.delete(index=f"*{tag}*", ignore_unavailable=True, expand_wildcards="all")


def test_rebuild_damage_fix_outdated_then_nothing(maintenance_airflow, maintenance_keyspace, s3_blobs, search):
    session = maintenance_keyspace
    client = make_client(search, max_retries=3)
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_users(ctx, session, users=2, inbox_messages=20, archive_messages=5)
    conf = {"blob_bucket": s3_blobs.default_bucket.value, "read_alias": search.read_alias,
            "write_alias": search.write_alias, "slices": 2, "messages_per_second": 500}

    assert indexed(client, search) == {}

    run, states, summary = run_dag(DAG_ID, {**conf, "mode": "rebuildAll"})
    assert run.state == "success", states
    assert states == {"check_params": "success", "backends_healthy": "success", "detect_repair_verify": "success",
                      "report": "success"}
    assert summary["detected"] == {"missingDocument": 50}
    assert summary["type"] == "full-reindexing" and summary["indexedMessageCount"] == 50
    assert indexed(client, search) == truth(session)

    first, second = seeded.users
    inbox = ctx.manager.get_messages(seeded.inbox[first])
    for m in inbox[:3]:
        client.delete(index=search.write_alias, id=f"{m.mailbox_id}:{m.uid}", routing=str(m.mailbox_id))
    ctx.manager.set_flags(seeded.inbox[second], Flags.of(SystemFlag.FLAGGED), FlagsUpdateMode.ADD, uids=[1, 2])
    ctx.manager.set_flags(seeded.inbox[second], Flags.of(SystemFlag.DELETED), FlagsUpdateMode.ADD, uids=[5])
    ctx.manager.expunge(seeded.inbox[second], uids=[5])

    run, states, summary = run_dag(DAG_ID, {**conf, "mode": "fixOutdated"})
    assert run.state == "success", states
    assert summary["detected"] == {"missingDocument": 3, "outdatedDocument": 2, "orphanDocument": 1}
    assert (summary["indexedMessageCount"], summary["fixedMessageCount"], summary["deletedDocumentCount"],
            summary["failedMessageCount"]) == (3, 2, 1, 0)
    assert indexed(client, search) == truth(session)
    # The verify pass (spark_apps/common/procedure.py detects again after the fixes): nothing left.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)


@pytest.mark.parametrize("conf", [{"mode": "everything"}, {"mailbox_id": "not-an-id"}, {"uid": 0},
                                  {"messages_per_second": 0}, {"read_alias": "bad alias"}])
def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow, conf):
    assert_refused(DAG_ID, conf, r"mode|mailbox_id|uid|messages_per_second|read_alias|not one of|"
                                 r"does not match|minimum|less than")
