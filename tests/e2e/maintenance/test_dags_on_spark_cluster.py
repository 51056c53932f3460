"""A repair DAG and the reindex DAG on a Spark standalone cluster (a master and two workers started
by the stack manager) report what they report on ``local[2]``.

On ``local[2]`` the executors share the driver's JVM and Python; on the cluster they are other
processes that get only what the submit ships (the ``spark_apps`` zip, the connector jars and the
interpreter named by the Spark connection), so a job that leaned on the driver's process would fail
or count differently here. Each run is checked to have been an application of the cluster's master.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from include.stack.services.spark import SparkStandalone
from mailserver.search.config import SearchConfig
from mailserver.search.index import ensure_index, make_client
from mailserver.search.mapping import index_body
from tests.e2e.maintenance.conftest import run_dag
from tests.integration.maintenance.test_message_inconsistencies_job import break_messages, projection_equals_truth
from tests.integration.maintenance.test_reindex_mailboxes_job import indexed, truth
from tests.support.mail_projections import mailbox_context, seed_users
from tests.support.maintenance import seed_mail
from tests.support.stack import service_for_the_block

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.spark_submit]


@pytest.fixture(scope="module")
def spark_cluster(stack) -> Iterator[SparkStandalone]:
    """The stack's Spark cluster, started for these tests when it is not running (and then stopped)."""
    with service_for_the_block("spark", SparkStandalone) as cluster:
        yield cluster


def point_spark_at(cluster: SparkStandalone, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Spark connection names the cluster; its extras size the executors (two of one core)."""
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", json.dumps({
        "conn_type": "spark", "host": cluster.master_url,
        "extra": {"executor_memory": "512m", "executor_cores": 1, "total_executor_cores": 2}}))


def applications(cluster: SparkStandalone) -> list[str]:
    with urllib.request.urlopen(f"{cluster.ui_url}/json/", timeout=10) as response:
        state = json.load(response)
    return [app["name"] for app in state.get("completedapps", []) + state.get("activeapps", [])]


def comparable(summary: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {key: summary.get(key) for key in keys}


def test_message_repair_on_the_cluster_finds_what_local_finds_and_repairs_it(
        maintenance_airflow, maintenance_keyspace, spark_cluster, monkeypatch):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=2, mailboxes_per_user=2, messages_per_mailbox=60)
    break_messages(session, seeded, added=3, removed=2, outdated=2)

    run, states, local = run_dag("solve_message_inconsistencies", {"dry_run": True})
    assert run.state == "success", states

    point_spark_at(spark_cluster, monkeypatch)
    before = applications(spark_cluster).count("solve-message-inconsistencies")
    run, states, clustered = run_dag("solve_message_inconsistencies", {"slices": 4})
    assert run.state == "success", states
    assert applications(spark_cluster).count("solve-message-inconsistencies") == before + 1
    # The repair's detection pass on the cluster finds what the dry run found on local[2] ...
    assert clustered["detected"] == local["detected"] == {
        "orphanImapUidEntry": 3, "orphanMessageIdEntry": 2, "outdatedMessageIdEntry": 2}
    assert clustered["processedImapUidEntries"] == local["processedImapUidEntries"]
    # ... and repairs it, to a clean verify pass.
    assert (clustered["addedMessageIdEntries"], clustered["removedMessageIdEntries"],
            clustered["updatedMessageIdEntries"], clustered["remaining"]) == (3, 2, 2, {})
    assert clustered["outcome"] == "COMPLETED"
    projection_equals_truth(session)


@pytest.fixture
def two_indexes(stack) -> Iterator[tuple[SearchConfig, SearchConfig]]:
    tag = uuid.uuid4().hex[:10]
    configs = tuple(SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_{where}_{tag}",
                                 read_alias=f"read_{where}_{tag}", write_alias=f"write_{where}_{tag}")
                    for where in ("local", "cluster"))
    client = make_client(configs[0], max_retries=3)
    for config in configs:
        ensure_index(client, config.index_name, index_body(1, 0), read_alias=config.read_alias,
                     write_alias=config.write_alias)
    yield configs   # type: ignore[misc]
    client.indices.delete(index=f"*{tag}*", ignore_unavailable=True, expand_wildcards="all")



# About two minutes (a reindex of the seeded mail through two executors): in `make test-cluster`, so
# that `make test` keeps within its time budget; the message repair below stays in `make test`.
@pytest.mark.cluster_suite
def test_reindex_on_the_cluster_builds_the_index_local_builds(maintenance_airflow, maintenance_keyspace, s3_blobs,
                                                               two_indexes, spark_cluster, monkeypatch):
    session = maintenance_keyspace
    local_index, cluster_index = two_indexes
    seed_users(mailbox_context(session, s3_blobs), session, users=2, inbox_messages=12, archive_messages=4)
    conf = {"blob_bucket": s3_blobs.default_bucket.value, "slices": 2, "messages_per_second": 500,
            "mode": "rebuildAll"}

    run, states, local = run_dag("reindex_mailboxes", {**conf, "read_alias": local_index.read_alias,
                                                       "write_alias": local_index.write_alias})
    assert run.state == "success", states

    point_spark_at(spark_cluster, monkeypatch)
    before = applications(spark_cluster).count("full-reindexing")
    run, states, clustered = run_dag("reindex_mailboxes", {**conf, "read_alias": cluster_index.read_alias,
                                                           "write_alias": cluster_index.write_alias})
    assert run.state == "success", states
    assert applications(spark_cluster).count("full-reindexing") == before + 1
    keys = ("outcome", "type", "detected", "indexedMessageCount", "failedMessageCount")
    assert comparable(clustered, keys) == comparable(local, keys)
    assert clustered["indexedMessageCount"] == 32
    client = make_client(cluster_index, max_retries=3)
    assert indexed(client, cluster_index) == truth(session) == indexed(client, local_index)
