"""A dry run writes nothing anywhere: one world seeded once, and each DAG's dry run over it (``dag.test()``).

The world has something for every procedure to find: messages and mailboxes apart from their
projections, wrong counters and quotas, lost fast views, mapping sources out of step, an empty
search index, expired vault months of a user, dead letters, a missing and an unexpected event-bus group
with an orphan message. Before and after each dry run everything a DAG could write is read back
(``tests/support/world_snapshot.py``): every table of the maintenance keyspace, this test's S3
buckets (keys and ETags), the depth of every queue of the broker's vhost, and WebAdmin's
maintenance state. The only writes allowed are the run's own record: its ``maintenance_audit``
row (the run's ``dag_run_id``) and its report under ``reports/<dag_id>__<run_id>/`` in the report
bucket, which this module points at a bucket of its own.

One Spark submit per DAG with a Spark job (``reconcile_event_bus_groups`` has none). Not in this world
yet: the mail-queue DAGs (they need the spool's world of test_mail_queue_dags.py, where the drain's
dry run is checked on the view, the broker and the blobs) and the schema migration (a keyspace at
version 10: test_cassandra_schema_migration_dag.py checks its dry run on the tables it migrates).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pika
import pytest

from mailserver.events.required_groups import RequiredGroups, RequireGroups, aggregate_id
from mailserver.eventsourcing.cassandra import CassandraEventStore
from mailserver.model.address import Username
from mailserver.model.events import serialize_event
from mailserver.search.config import SearchConfig
from mailserver.search.index import ensure_index, make_client
from mailserver.search.mapping import index_body
from spark_apps.common.reports import s3_client
from tests.e2e.maintenance.conftest import run_dag, webadmin_get
from tests.integration.maintenance.test_current_quotas_job import break_quotas
from tests.integration.maintenance.test_fast_view_projection_job import lose_fast_views
from tests.integration.maintenance.test_message_inconsistencies_job import break_messages
from tests.support.counters_maintenance import break_counters
from tests.support.event_bus_maintenance import (
    NAMES,
    declare_bus,
    delete_bus_objects,
    group_name,
    publish_raw,
    rabbitmq_connections,
    seed_dead_letters,
)
from tests.support.events import sample_added
from tests.support.mail_projections import mailbox_context, register_user, seed_users
from tests.support.mailbox_inconsistencies import break_mailboxes, seed_mailboxes
from tests.support.maintenance import clear_keyspace, seed_mail
from tests.support.rrt_maintenance import break_mappings, seed_mappings
from tests.support.vault_seed import months_from, prefixed_vault_store, seed_vault
from tests.support.world_snapshot import RunRecord, World, differences

pytestmark = [pytest.mark.e2e, pytest.mark.spark,
              pytest.mark.timeout(1800)]   # the world's seeding, then one Spark run, on a shared 2-core host

REQUIRED, UNEXPECTED = group_name("DryRunRequired"), group_name("DryRunUnexpected")
MISSING = group_name("DryRunMissing")
VAULT_MONTHS = months_from(datetime(2024, 6, 3, 8, tzinfo=UTC), 4)
VAULT_RETENTION = "2024-08-01T00:00:01Z"   # the first two months expired
VAULT_OWNER = "dry@vault.example"


@dataclass
class DryRunWorld:
    world: World
    report_bucket: str
    conf: dict[str, dict[str, Any]] = field(default_factory=dict)   # per DAG, beside dry_run


@pytest.fixture(scope="module")
def dry_run_world(stack, maintenance_airflow, maintenance_cassandra, maintenance_webadmin,
                  s3_blobs) -> Iterator[DryRunWorld]:
    session = maintenance_cassandra
    session.faults.clear()
    clear_keyspace(session)
    tag = uuid.uuid4().hex[:8]
    amqp_url = maintenance_webadmin.env["AMQP_URL"]
    report_bucket = f"dry-run-reports-{tag}"
    search = SearchConfig(urls=(stack.opensearch_url,), index_name=f"mailbox_dry_run_{tag}",
                          read_alias=f"read_dry_run_{tag}", write_alias=f"write_dry_run_{tag}")
    search_client = make_client(search, max_retries=3)
    with pytest.MonkeyPatch.context() as env, prefixed_vault_store(stack, f"dr{tag}-", f"dry-run-{tag}") as vault:
        env.setenv("MAINTENANCE_REPORT_BUCKET", report_bucket)
        for name, value in rabbitmq_connections(stack, amqp_url).items():
            env.setenv(name, value)
        ensure_index(search_client, search.index_name, index_body(1, 0), read_alias=search.read_alias,
                     write_alias=search.write_alias)
        client = s3_client({"S3_ENDPOINT": stack.s3_endpoint, "S3_ACCESS_KEY": stack.s3_access_key,
                            "S3_SECRET_KEY": stack.s3_secret_key, "S3_REGION": stack.s3_region})
        client.create_bucket(Bucket=report_bucket)
        try:
            seed(session, s3_blobs, vault, amqp_url)
            mine = (report_bucket, s3_blobs.default_bucket.value, vault.config.bucket_prefix)
            world = World(session=session, s3_client=client, buckets=lambda name: name.startswith(mine),
                          amqp_url=amqp_url, management_url=stack.rabbitmq_management_url.rstrip("/"),
                          maintenance_state=lambda: webadmin_get(maintenance_webadmin, "/maintenance"))
            blob_bucket = {"blob_bucket": s3_blobs.default_bucket.value}
            yield DryRunWorld(world, report_bucket, conf={
                "recompute_mailbox_counters": {"trust_message_projection": True},
                "recompute_fast_view_projection": blob_bucket,
                "reindex_mailboxes": {**blob_bucket, "mode": "rebuildAll", "read_alias": search.read_alias,
                                      "write_alias": search.write_alias},
                "purge_deleted_messages_vault": {"beginning_of_retention": VAULT_RETENTION,
                                                 "bucket_prefix": vault.config.bucket_prefix},
                "restore_deleted_messages": {**blob_bucket, "user": VAULT_OWNER, "query": {"criteria": []},
                                             "bucket_prefix": vault.config.bucket_prefix},
            })
        finally:
            drop_bucket(client, report_bucket)
            delete_bus_objects(amqp_url, [REQUIRED, UNEXPECTED, MISSING])
            search_client.indices.delete(index=f"*{tag}*", ignore_unavailable=True, expand_wildcards="all")


def drop_bucket(client: Any, bucket: str) -> None:
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        for item in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=item["Key"])
    client.delete_bucket(Bucket=bucket)


def seed(session: Any, blobs: Any, vault: Any, amqp_url: str) -> None:
    """A little of everything, each procedure's inconsistency made where production makes it."""
    mail = seed_mail(session, users=2, mailboxes_per_user=2, messages_per_mailbox=20)
    break_messages(session, mail, added=1, removed=1, outdated=1)
    break_counters(session, seed_mail(session, users=1, mailboxes_per_user=2, messages_per_mailbox=20),
                   appends=1, flag_changes=1, expunges=0, projection_orphans=0)
    ctx = mailbox_context(session, blobs)
    users = seed_users(ctx, session, users=3, inbox_messages=2, archive_messages=1)
    break_quotas(ctx, session, users)
    lose_fast_views(ctx, session, users, per_user=1)
    break_mailboxes(session, seed_mailboxes(session, users=1, per_user=3), orphan_paths=1)
    break_mappings(session, seed_mappings(session, per_type=2), missing=1, orphan=1)
    seed_vault(session, vault, VAULT_MONTHS, 8, [VAULT_OWNER])
    register_user(session, Username.of(VAULT_OWNER))
    seed_dead_letters(session, {REQUIRED: 3})
    vhost = pika.URLParameters(amqp_url).virtual_host
    RequiredGroups(CassandraEventStore(session), aggregate_id("mailboxEvent", vhost)).require(
        RequireGroups.of({REQUIRED, MISSING}, host="listeners-node-1"))
    declare_bus(amqp_url, [REQUIRED, UNEXPECTED])
    publish_raw(amqp_url, NAMES.retry_exchange(UNEXPECTED), [serialize_event(sample_added(uid=1))],
                {"retry-count": 1})


def detected(summary: dict[str, Any]) -> Any:
    return summary.get("detected")


# Each DAG with a dry run over this world, and what its summary shows it found.
FOUND: dict[str, Callable[[dict[str, Any]], Any]] = {
    "solve_message_inconsistencies": detected,
    "solve_mailbox_inconsistencies": detected,
    # the option reaches the job (trusted, the projection's orphans are not counted)
    "recompute_mailbox_counters": lambda summary: (summary.get("runningOptions") == {"trustMessageProjection": True}
                                                   and detected(summary)),
    "recompute_current_quotas": detected,
    "recompute_fast_view_projection": detected,
    "solve_mappings_sources_inconsistencies": detected,
    "reindex_mailboxes": detected,
    "purge_deleted_messages_vault": detected,
    "restore_deleted_messages": lambda summary: summary.get("matchingEntries"),
    "redeliver_event_dead_letters": detected,
    "reconcile_event_bus_groups": lambda summary: summary.get("missing") and summary.get("orphans"),
}


@pytest.mark.parametrize("dag_id", list(FOUND))
def test_a_dry_run_leaves_every_table_bucket_queue_and_the_maintenance_state_as_they_were(
        dry_run_world: DryRunWorld, dag_id: str) -> None:
    world = dry_run_world.world
    before = world.snapshot()

    run, states, summary = run_dag(dag_id, {**dry_run_world.conf.get(dag_id, {}), "dry_run": True})

    assert run.state == "success", states
    assert summary.get("outcome") == "DRY_RUN", summary
    assert FOUND[dag_id](summary), f"the dry run found nothing to do: {summary}"
    after = world.snapshot(RunRecord(dag_id, run.run_id, dry_run_world.report_bucket))
    assert differences(before, after) == []
