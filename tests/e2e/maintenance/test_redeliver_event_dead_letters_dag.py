"""The dead-letter redelivery DAG run by Airflow (``dag.test()``): gates, Spark, report, the after-check.

Dead letters are seeded in the maintenance keyspace under two listener groups and the bus's
dispatching-failure group; the broker is the maintenance WebAdmin's own vhost (so WebAdmin's
``RabbitMQ backend`` and ``EventDeadLettersHealthCheck`` look at what the DAG changes), with the
bus declared and the groups bound as running nodes leave it. Checked with CQL and AMQP by the test:
one group, then all, are redelivered to their queues and their rows are gone, and the verify pass
finds nothing left. The dry run is checked in test_dry_runs_write_nothing.py (nothing written, queue
depths unchanged) and in tests/integration/maintenance/test_event_dead_letters_job.py (its counts).
"""

from __future__ import annotations

import pytest

from spark_apps.common.mail_queues import ready_count
from tests.e2e.maintenance.conftest import load_dag, run_dag
from tests.support.event_bus_maintenance import (
    NAMES,
    dead_letter_counts,
    declare_bus,
    delete_bus_objects,
    event_id_of,
    group_name,
    rabbitmq_connections,
    seed_dead_letters,
    take_all,
)

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DAG_ID = "redeliver_event_dead_letters"
QUOTA, INDEX = group_name("QuotaE2e"), group_name("IndexE2e")
FAILED_DISPATCH = NAMES.dispatching_failure_group


@pytest.fixture
def bus(maintenance_airflow, maintenance_webadmin, stack, monkeypatch):
    amqp_url = maintenance_webadmin.env["AMQP_URL"]
    for name, value in rabbitmq_connections(stack, amqp_url).items():
        monkeypatch.setenv(name, value)
    declare_bus(amqp_url, [QUOTA, INDEX])
    yield amqp_url
    take_all(amqp_url, NAMES.shared_queue)
    delete_bus_objects(amqp_url, [QUOTA, INDEX])


def test_one_group_then_all_then_nothing_left(maintenance_keyspace, bus):
    session = maintenance_keyspace
    seeded = seed_dead_letters(session, {QUOTA: 400, INDEX: 300, FAILED_DISPATCH: 100})

    run, states, summary = run_dag(DAG_ID, {"scope": "group", "group": QUOTA, "events_per_second": 2000,
                                            "slices": 2})
    assert run.state == "success", states
    assert set(states.values()) == {"success"}, states
    assert summary["detected"] == {QUOTA: 400}
    assert summary["type"] == "event-dead-letters-redeliver-group" and summary["group"] == QUOTA
    assert summary["groups"] == {QUOTA: {"found": 400, "redelivered": 400, "failed": 0, "failedInsertionIds": []}}
    assert dead_letter_counts(session) == {INDEX: 300, FAILED_DISPATCH: 100}
    assert {event_id_of(b) for b in take_all(bus, NAMES.work_queue(QUOTA))} == seeded.event_ids(QUOTA)

    run, states, summary = run_dag(DAG_ID, {"slices": 2})
    assert run.state == "success", states
    assert states["dead_letters_cleared"] == "success"      # WebAdmin's EventDeadLettersHealthCheck healthy
    assert (summary["successfulRedeliveriesCount"], summary["failedRedeliveriesCount"]) == (400, 0)
    assert {g: v["redelivered"] for g, v in summary["groups"].items()} == {INDEX: 300, FAILED_DISPATCH: 100}
    assert dead_letter_counts(session) == {}
    assert ready_count(bus, NAMES.work_queue(INDEX)) == 300
    assert ready_count(bus, NAMES.shared_queue) == 100   # dispatched again to every group
    # The verify pass (detection again after the redelivery): nothing left.
    assert (summary["remaining"], summary["unresolved"]) == ({}, 0)


def test_a_scope_without_its_group_is_refused_before_anything_runs(maintenance_airflow):
    from airflow.sdk.exceptions import ParamValidationError

    run, states, _ = run_dag(DAG_ID, {"scope": "event"})
    assert run.state == "failed"
    assert states["check_params"] == "failed" and states["detect_redeliver_verify"] == "upstream_failed"
    with pytest.raises(ParamValidationError, match="Invalid input for param insertion_id: '42' does not match"):
        load_dag(DAG_ID).test(run_conf={"scope": "event", "group": QUOTA, "insertion_id": "42"})
