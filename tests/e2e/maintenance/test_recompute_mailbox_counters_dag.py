"""The mailbox-counters DAG run by Airflow (``dag.test()``): health gate, Spark, report.

Seeded through the fault seam (counter updates lost on append, flag change and expunge);
checked with CQL by the test: the report's counters equal the seeded faults, every counter
equals what ``imapUidTable`` holds afterwards, and the verify pass finds nothing left. The DAG
does not switch maintenance mode on (the operator does, by hand). Its dry run, with the projection
trusted, is checked in test_dry_runs_write_nothing.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.maintenance.conftest import load_dag, run_dag
from tests.support.counters_maintenance import break_counters, counters_match_truth
from tests.support.maintenance import seed_mail

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "recompute_mailbox_counters"


def test_repair_then_nothing_left(maintenance_airflow, maintenance_keyspace):
    session = maintenance_keyspace
    seeded = seed_mail(session, users=2, mailboxes_per_user=4, messages_per_mailbox=300)   # 2,400 messages
    broken = break_counters(session, seeded, appends=2, flag_changes=2, expunges=1, projection_orphans=1)

    run, states, summary = run_dag(DAG_ID, {"slices": 2})
    assert run.state == "success", states
    assert states == {"check_params": "success", "backends_healthy": "success", "detect_repair_verify": "success",
                      "report": "success"}
    wrong = len(broken.counters) + len(broken.projection)
    assert summary["detected"] == {"outdatedMailboxCounters": wrong}
    assert (summary["processedMailboxes"], summary["failedMailboxes"], summary["recomputedMailboxes"]) == (
        len(seeded.by_mailbox), [], wrong)
    assert summary["outcome"] == "COMPLETED"
    counters_match_truth(session)

    # A second run's detection is the job's own verify pass (spark_apps/common/procedure.py detects
    # again, reading the tables afterwards): nothing left. A second spark-submit of the same code is
    # kept once, in test_solve_mailbox_inconsistencies_dag.py.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)


def test_invalid_params_are_refused_before_anything_runs(maintenance_airflow):
    from airflow.sdk.exceptions import ParamValidationError

    dag = load_dag(DAG_ID)
    refused = r"Invalid input for param trust_message_projection: 'yes' is not of type .*'boolean'"
    with pytest.raises(ParamValidationError, match=refused):
        dag.test(run_conf={"trust_message_projection": "yes"})
