"""The current-quota DAG run by Airflow (``dag.test()``): health gate, maintenance mode, Spark, report.

Quotas broken by failed listener writes through the mailbox manager; checked with CQL by the
test: the report's counters equal the broken roots, every quota equals its messages afterwards,
maintenance mode is on during the repair and off at the end, and the verify pass finds nothing left.
The dry run (nothing written, maintenance mode never on) is checked in test_dry_runs_write_nothing.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.maintenance.conftest import load_dag, run_dag, webadmin_get
from tests.integration.maintenance.test_current_quotas_job import break_quotas, quotas_equal_messages
from tests.support.mail_projections import mailbox_context, seed_users
from tests.support.maintenance import append_mail, create_mailboxes, seed_mail

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "recompute_current_quotas"


def test_repair_in_maintenance_mode_then_nothing_left(maintenance_airflow, maintenance_webadmin,
                                                       maintenance_keyspace, s3_blobs):
    session = maintenance_keyspace
    ctx = mailbox_context(session, s3_blobs)
    seeded = seed_users(ctx, session, users=3, inbox_messages=4, archive_messages=2)
    # The bulk, with the quota the listener counted: 1,800 more messages for these users, and two
    # users with nothing to fix (1,000 messages).
    append_mail(session, create_mailboxes(session, seeded.users, ["Bulk1", "Bulk2"]), 300)
    users = [*seeded.users, *seed_mail(session, users=2, mailboxes_per_user=2, messages_per_mailbox=250).users]
    broken = break_quotas(ctx, session, seeded)

    run, states, summary = run_dag(DAG_ID, {"slices": 2})
    assert run.state == "success", states
    assert {k: states[k] for k in ("maintenance_window", "detect_repair_verify", "report",
                                   "disable_maintenance")} == dict.fromkeys(
        ("maintenance_window", "detect_repair_verify", "report", "disable_maintenance"), "success")
    assert summary["type"] == "recompute-current-quotas" and summary["outcome"] == "COMPLETED"
    assert summary["detected"] == {"outdatedCurrentQuota": len(broken)}
    assert summary["recomputedQuotaRoots"] == len(broken) and summary["processedQuotaRoots"] == len(users)
    assert summary["failedQuotaRoots"] == []
    quotas_equal_messages(session, users)
    # the Spark task switched it on inside its slot and off after its job; the teardown checked it
    assert webadmin_get(maintenance_webadmin, "/maintenance")["enabled"] is False

    # A second run's detection is the job's own verify pass (spark_apps/common/procedure.py detects
    # again, reading the tables afterwards): nothing left. A second spark-submit of the same code is
    # kept once, in test_solve_mailbox_inconsistencies_dag.py.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)


@pytest.mark.parametrize("conf", [{"quota_components": ["SIEVE"]}, {"user": "not an address"},
                                  {"quota_components": ["MAILBOX", "MAILBOX"]}])
def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow, conf):
    from airflow.sdk.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError, match=f"Invalid input for param {next(iter(conf))}: "):
        load_dag(DAG_ID).test(run_conf=conf)
