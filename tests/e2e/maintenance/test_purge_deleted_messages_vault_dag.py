"""The vault purge DAG run by Airflow (``dag.test()``): health gate, Spark, report; one real spark-submit per run.

A small vault (90 entries over 18 months, 3 owners, content in S3 buckets of this test's prefix):
the dry run lists exactly the entries of the 12 expired months and writes nothing (CQL and S3 read
back unchanged); the real run deletes them, drops those months, and leaves the 6 others as they were.
The volume and a real kill are tests/integration/vault/test_purge_vault_job.py's.
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.maintenance.conftest import run_dag
from tests.support.vault_seed import (
    PURGE_BEGINNING,
    PURGE_TASK_TYPE,
    expected_state,
    prefixed_vault_store,
    purge_months,
    seed_vault,
    vault_state,
)

pytestmark = [pytest.mark.e2e, pytest.mark.spark, pytest.mark.spark_submit]   # dag.test() through a real submit

DAG_ID = "purge_deleted_messages_vault"
MONTHS, EXPIRED, KEPT = purge_months(day=3, hour=8)
PER_MONTH = 5


@pytest.fixture
def vault_store(stack):
    """The vault's S3 buckets under a prefix of this test (``deleted-messages-*`` names are global)."""
    tag = uuid.uuid4().hex[:8]
    with prefixed_vault_store(stack, f"vp{tag}-", f"vault-dag-{tag}") as store:
        yield store


def test_dry_run_lists_and_writes_nothing_then_the_purge_deletes_the_expired_months(
        maintenance_airflow, maintenance_keyspace, vault_store):
    from mailplatform.hooks.reports import MaintenanceReportHook

    session = maintenance_keyspace
    owners = [f"dag{n}@vault.example" for n in range(3)]
    entries = seed_vault(session, vault_store, MONTHS, 18 * PER_MONTH, owners)
    expired = [e for e in entries if e.bucket in EXPIRED]
    before = vault_state(session, vault_store)
    assert before == expected_state(entries)
    conf = {"beginning_of_retention": PURGE_BEGINNING, "bucket_prefix": vault_store.config.bucket_prefix, "slices": 2}

    run, states, summary = run_dag(DAG_ID, {**conf, "dry_run": True})
    assert run.state == "success", states
    assert summary["outcome"] == "DRY_RUN" and summary["type"] == PURGE_TASK_TYPE
    assert summary["detected"] == {b: PER_MONTH for b in EXPIRED}
    assert summary["wouldDeleteBuckets"] == EXPIRED and summary["deletedBuckets"] == []
    report = MaintenanceReportHook().read(PURGE_TASK_TYPE, f"{DAG_ID}/{run.run_id}")
    assert {(i["bucketname"], i["owner"], i["messageid"]) for i in report["detectedItems"]} == \
        {(e.bucket, e.owner, e.message_id) for e in expired}
    assert vault_state(session, vault_store) == before

    run, states, summary = run_dag(DAG_ID, conf)
    assert run.state == "success", states
    assert states == {"check_params": "success", "backends_healthy": "success", "detect_repair_verify": "success",
                      "report": "success"}
    assert summary["outcome"] == "COMPLETED" and summary["remaining"] == {}
    assert summary["deletedEntries"] == len(expired) == 12 * PER_MONTH
    assert summary["deletedBuckets"] == EXPIRED
    assert vault_state(session, vault_store) == expected_state([e for e in entries if e.bucket in KEPT])
