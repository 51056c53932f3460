"""The search-index swap DAG run by Airflow (``dag.test()``) on the real OpenSearch and Cassandra (issue 13).

An index of one shard holds the documents of messages appended through the mailbox manager (built
with the indexing listener's own code). The DAG swaps to a three-shard index while mail flows (a
writer thread appends messages and indexes them through the write alias, as the listener does) and
a reader thread searches through the read alias the whole time: every search answers, with at least
every message indexed before it; at the end the aliases name the new index only, it is recorded,
and no message is missing from it, those delivered during the swap included. A run
made to fail after verification leaves the aliases and the recorded index exactly as before.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from mailserver.model.mailbox import MailboxPath
from mailserver.search.config import SearchConfig
from mailserver.search.index import (
    alias_indices,
    bulk_index,
    ensure_index,
    make_client,
    record_current_index,
    recorded_index,
)
from mailserver.search.listener import build_document
from mailserver.search.mapping import index_body
from tests.e2e.maintenance.conftest import run_dag
from tests.integration.maintenance.test_reindex_mailboxes_job import indexed, truth
from tests.support.mail_projections import mailbox_context, seed_users

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "swap_search_index"


@pytest.fixture
def search(stack) -> Iterator[SearchConfig]:
    tag = uuid.uuid4().hex[:10]
    config = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_swap_{tag}",
                          read_alias=f"read_swap_{tag}", write_alias=f"write_swap_{tag}",
                          state_index=f"state_swap_{tag}")
    yield config
    make_client(config, max_retries=3).indices.delete(index=f"*{tag}*", ignore_unavailable=True,
                                                       expand_wildcards="all")


@pytest.fixture
def indexed_mail(maintenance_keyspace, s3_blobs, search) -> int:
    """Messages in Cassandra + S3, and their documents in a one-shard index behind both aliases."""
    ctx = mailbox_context(maintenance_keyspace, s3_blobs)
    seeded = seed_users(ctx, maintenance_keyspace, users=2, inbox_messages=40, archive_messages=10)
    client = make_client(search, max_retries=3)
    ensure_index(client, search.index_name, index_body(1, 0), read_alias=search.read_alias,
                 write_alias=search.write_alias)
    record_current_index(client, search.index_name, read_alias=search.read_alias, write_alias=search.write_alias,
                         state_index=search.state_index)
    documents = [build_document(m, ctx.manager.read_message(m.message_id), user, search.documents)
                 for user in seeded.users for path in (seeded.inbox[user], seeded.archive[user])
                 for m in ctx.manager.get_messages(path)]
    report = bulk_index(client, documents, write_alias=search.write_alias, refresh="wait_for")
    assert (report.succeeded, report.failed) == (100, 0)
    return len(documents)


def conf(search: SearchConfig, new_index: str, **extra) -> dict:
    return {"new_index": new_index, "shards": 3, "replicas": 0, "read_alias": search.read_alias,
            "write_alias": search.write_alias, "state_index": search.state_index, "sample_size": 50, **extra}


class Writer(threading.Thread):
    """Mail flowing during the swap: append a message, index it through the write alias, again."""

    def __init__(self, ctx, client, search: SearchConfig, user) -> None:
        super().__init__(daemon=True)
        self.ctx, self.client, self.search, self.inbox = ctx, client, search, MailboxPath.inbox(user)
        self.acknowledged, self.errors = 0, []
        self.done = threading.Event()

    def run(self) -> None:
        n = 0
        while not self.done.is_set():
            n += 1
            raw = f"From: flow@example.com\r\nSubject: during the swap {n}\r\n\r\nbody {n}\r\n".encode()
            try:
                result = self.ctx.manager.append(self.inbox, raw, is_delivery=True)
                document = build_document(result.metadata, raw, self.inbox.user, self.search.documents)
                report = bulk_index(self.client, [document], write_alias=self.search.write_alias, refresh="wait_for")
                if report.failed:
                    self.errors.append(report.failures)
                else:
                    self.acknowledged += 1
            except Exception as exc:  # an index refusing writes is what the swap must never cause
                self.errors.append(repr(exc))
            time.sleep(0.1)


class Reader(threading.Thread):
    """Searches the read alias in a loop: how many answered, and every answer that missed indexed mail."""

    def __init__(self, client, alias: str, expected: int, writer: Writer | None = None) -> None:
        super().__init__(daemon=True)
        self.client, self.alias, self.expected, self.writer = client, alias, expected, writer
        self.answers, self.wrong = 0, []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            # What was acknowledged before the search must be found; more may arrive meanwhile.
            floor = self.expected + (self.writer.acknowledged if self.writer else 0)
            try:
                total = self.client.count(index=self.alias, body={"query": {"match_all": {}}})["count"]
                if total < floor or (self.writer is None and total != self.expected):
                    self.wrong.append((total, floor))
                self.answers += 1
            except Exception as exc:  # a search that fails is what the swap must never cause
                self.wrong.append(repr(exc))
            time.sleep(0.05)


def test_swap_to_three_shards_while_mail_flows_and_reads_answer(maintenance_airflow, maintenance_keyspace, s3_blobs,
                                                                search, indexed_mail):
    client = make_client(search, max_retries=0)
    new_index = f"{search.index_name}_v2"
    ctx = mailbox_context(maintenance_keyspace, s3_blobs)
    flowing = seed_users(ctx, maintenance_keyspace, users=1, inbox_messages=0, archive_messages=0).users[0]
    writer = Writer(ctx, make_client(search, max_retries=3), search, flowing)
    reader = Reader(client, search.read_alias, indexed_mail, writer)
    writer.start()
    reader.start()
    try:
        run, states, _ = run_dag(DAG_ID, conf(search, new_index))
    finally:
        writer.done.set()
        writer.join(30)
        reader.done.set()
        reader.join(10)
    assert writer.errors == [] and writer.acknowledged >= 5, (writer.acknowledged, writer.errors[:5])
    assert run.state == "success", states
    assert states["switch_reads"] == "success" and states["rollback"] == "success"
    assert states["rebuild_from_cassandra"] == "skipped"
    assert reader.answers > 20 and reader.wrong == [], reader.wrong[:10]
    assert alias_indices(client, search.read_alias) == alias_indices(client, search.write_alias) == [new_index]
    assert recorded_index(client, read_alias=search.read_alias, state_index=search.state_index) == new_index
    settings = client.indices.get_settings(index=new_index)[new_index]["settings"]["index"]
    assert settings["number_of_shards"] == "3"
    # No message missing, flags equal: those delivered during the swap too (truth reads Cassandra).
    assert indexed(client, search) == truth(maintenance_keyspace)
    assert len(truth(maintenance_keyspace)) == indexed_mail + writer.acknowledged
    assert client.indices.exists(index=search.index_name)            # kept: drop_old_index was not asked


def test_a_run_failing_after_verification_leaves_the_aliases_as_before(maintenance_airflow, search, indexed_mail):
    client = make_client(search, max_retries=3)
    new_index = f"{search.index_name}_failed"
    run, states, _ = run_dag(DAG_ID, conf(search, new_index, fail_after="verify", drop_old_index=True))
    assert run.state == "failed", states
    assert states["verify"] == "failed" and states["switch_reads"] == "upstream_failed"
    assert states["rollback"] == "success"
    assert alias_indices(client, search.read_alias) == alias_indices(client, search.write_alias) == \
        [search.index_name]
    assert recorded_index(client, read_alias=search.read_alias, state_index=search.state_index) == search.index_name
    assert client.indices.exists(index=new_index) and client.indices.exists(index=search.index_name)
    assert client.count(index=search.read_alias)["count"] == indexed_mail


@pytest.mark.parametrize("bad", [{"new_index": "Mailbox_V2"}, {"shards": 0}, {"source": "elsewhere"},
                                 {"settings_json": {"aliases": {}}}, {"fail_after": "nowhere"}])
def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow, bad):
    from tests.e2e.maintenance.conftest import assert_refused

    assert_refused(DAG_ID, bad, r"new_index|shards|source|settings_json|fail_after|not one of|"
                                r"does not match|minimum|Additional properties|not valid")


def test_swap_rebuilt_from_cassandra_fills_what_the_old_index_lost(maintenance_airflow, maintenance_keyspace,
                                                                   s3_blobs, search, indexed_mail):
    client = make_client(search, max_retries=3)
    for hit in client.search(index=search.read_alias, body={"size": 5, "query": {"match_all": {}}})["hits"]["hits"]:
        client.delete(index=search.write_alias, id=hit["_id"], routing=hit["_routing"], refresh="wait_for")
    new_index = f"{search.index_name}_rebuilt"
    run, states, _ = run_dag(DAG_ID, conf(search, new_index, source="cassandra", shards=2,
                                          blob_bucket=s3_blobs.default_bucket.value))
    assert run.state == "success", states
    assert states["rebuild_from_cassandra"] == "success" and states["copy_with_reindex_api"] == "skipped"
    assert alias_indices(client, search.read_alias) == alias_indices(client, search.write_alias) == [new_index]
    assert indexed(client, search) == truth(maintenance_keyspace)     # the 5 lost documents are back
    assert len(truth(maintenance_keyspace)) == indexed_mail
