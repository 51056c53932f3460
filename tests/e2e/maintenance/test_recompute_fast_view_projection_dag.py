"""The fast-view DAG run by Airflow (``dag.test()``): health gate, Spark reading S3, report.

Rows lost by failed listener writes on real MIME appended through the mailbox manager; checked
with CQL by the test: counters equal to the rows lost, rows equal to what the server computes,
and a verify pass that finds nothing left. The dry run is checked in test_dry_runs_write_nothing.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.maintenance.conftest import load_dag, run_dag
from tests.integration.maintenance.test_fast_view_projection_job import (
    lose_fast_views,
    rows_equal_server_computation,
)
from tests.support.mail_projections import fast_view_rows, mailbox_context, message_ids, seed_users
from tests.support.maintenance import append_mail, create_mailboxes, seed_mail

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "recompute_fast_view_projection"


def test_repair_then_nothing_left(maintenance_airflow, maintenance_keyspace, s3_blobs):
    session = maintenance_keyspace
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_users(ctx, session, users=2, inbox_messages=4, archive_messages=1)
    # The bulk, with the rows the listener wrote (no content in S3: it needs no recomputation):
    # 1,200 more messages for these users, 1,500 for three others.
    append_mail(session, create_mailboxes(session, seeded.users, ["Bulk"]), 600)
    users = [*seeded.users, *seed_mail(session, users=3, mailboxes_per_user=2, messages_per_mailbox=250).users]
    lost = lose_fast_views(ctx, session, seeded, per_user=3)
    bucket = {"blob_bucket": s3_blobs.default_bucket.value}

    run, states, summary = run_dag(DAG_ID, {**bucket, "slices": 2})
    assert run.state == "success", states
    assert states == {"check_params": "success", "backends_healthy": "success", "detect_repair_verify": "success",
                      "report": "success"}
    assert summary["type"] == "RecomputeAllFastViewProjectionItemsTask" and summary["outcome"] == "COMPLETED"
    assert summary["detected"] == {"missingFastViewProjection": len(lost)}
    assert (summary["processedUserCount"], summary["processedMessageCount"]) == (len(users), len(lost))
    assert (summary["failedUserCount"], summary["failedMessageCount"]) == (0, 0)
    assert set(fast_view_rows(session)) == message_ids(session)
    rows_equal_server_computation(session, s3_blobs, lost)

    # A second run's detection is the job's own verify pass (spark_apps/common/procedure.py detects
    # again, reading the tables afterwards): nothing left. A second spark-submit of the same code is
    # kept once, in test_solve_mailbox_inconsistencies_dag.py.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)


@pytest.mark.parametrize("conf", [{"mode": "everything"}, {"blob_bucket": "Not_A_Bucket"}, {"user": "no user"}])
def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow, conf):
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError, match=f"Invalid input for param {next(iter(conf))}: "):
        load_dag(DAG_ID).test(run_conf=conf)
