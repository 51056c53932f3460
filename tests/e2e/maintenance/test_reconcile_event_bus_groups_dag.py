"""The group reconciliation DAG run by Airflow (``dag.test()``) on the maintenance WebAdmin's own vhost.

Required groups A and B in the aggregate (as a listeners node records them); on the broker A is
bound and C is bound with 3 messages in its queue (a listener removed from the configuration).
A dry run reports B missing, C unexpected and C's queue orphaned with its 3 messages, and changes
nothing; the real run binds B, unbinds C, stores C's 3 messages as dead letters of C (CQL), deletes
C's emptied queue, and WebAdmin's ``RabbitMQEventBusGroups`` check is healthy again; a second run
finds nothing.
"""

from __future__ import annotations

import pika
import pytest

from mailserver.events.registered_groups import RegisteredGroups
from mailserver.events.required_groups import RequiredGroups, RequireGroups, aggregate_id
from mailserver.eventsourcing.cassandra import CassandraEventStore
from mailserver.model.events import serialize_event
from mailserver.rabbitmq_management import RabbitMQManagement
from spark_apps.common.mail_queues import ready_count
from tests.e2e.maintenance.conftest import run_dag, webadmin_get
from tests.support.event_bus_maintenance import (
    NAMES,
    declare_bus,
    delete_bus_objects,
    group_name,
    publish_raw,
    rabbitmq_connections,
)
from tests.support.events import sample_added

pytestmark = [pytest.mark.e2e]

DAG_ID = "reconcile_event_bus_groups"
A, B, C = group_name("ReconcileA"), group_name("ReconcileB"), group_name("ReconcileC")


@pytest.fixture
def bus(maintenance_airflow, maintenance_webadmin, stack, monkeypatch):
    amqp_url = maintenance_webadmin.env["AMQP_URL"]
    for name, value in rabbitmq_connections(stack, amqp_url).items():
        monkeypatch.setenv(name, value)
    yield amqp_url
    delete_bus_objects(amqp_url, [A, B, C])


def test_dry_run_then_reconcile_moving_the_orphan_messages_then_nothing_left(maintenance_keyspace,
                                                                           maintenance_webadmin, bus):
    session = maintenance_keyspace
    vhost = pika.URLParameters(bus).virtual_host      # the servers keep one aggregate per vhost
    RequiredGroups(CassandraEventStore(session), aggregate_id("mailboxEvent", vhost)).require(
        RequireGroups.of({A, B}, host="listeners-node-1"))
    declare_bus(bus, [A, C])
    events = [serialize_event(sample_added(uid=i)) for i in (1, 2, 3)]
    publish_raw(bus, NAMES.retry_exchange(C), events, {"retry-count": 1})

    run, states, summary = run_dag(DAG_ID, {"dry_run": True})
    assert run.state == "success", states
    assert (states["reconcile"], states["groups_healthy"]) == ("skipped", "skipped")
    assert summary["outcome"] == "DRY_RUN"
    assert (summary["missing"], summary["unexpected"]) == ([B], [C])
    assert summary["orphans"] == [{"group": C, "queue": NAMES.work_queue(C), "messages": 3, "consumers": 0}]
    assert summary["requiredGroupsAudit"][0]["host"] == "listeners-node-1"
    assert ready_count(bus, NAMES.work_queue(C)) == 3 and ready_count(bus, NAMES.work_queue(B)) is None
    assert session.execute('SELECT event FROM event_dead_letters WHERE "group" = ?', (C,)) == []

    run, states, summary = run_dag(DAG_ID, {"move_orphan_messages_to_dead_letters": True,
                                            "messages_per_second": 100})
    assert run.state == "success", states
    assert set(states.values()) == {"success"}, states   # groups_healthy: WebAdmin's check healthy again
    assert summary["outcome"] == "COMPLETED" and summary["problems"] == []
    assert (summary["bound"], summary["unbound"]) == ([B], [C])
    assert summary["movedToDeadLetters"] == {C: 3} and summary["deletedQueues"] == [NAMES.work_queue(C)]
    assert summary["remaining"] == {"missingGroups": 0, "unexpectedGroups": 0, "orphanQueues": 0, "orphanMessages": 0}
    stored = session.execute('SELECT event FROM event_dead_letters WHERE "group" = ?', (C,))
    assert sorted(r["event"] for r in stored) == sorted(events)          # nothing lost, each once
    assert session.execute('SELECT "group" FROM group_table WHERE "group" = ?', (C,)) == [{"group": C}]
    assert ready_count(bus, NAMES.work_queue(C)) is None and ready_count(bus, NAMES.work_queue(B)) == 0
    groups_check = webadmin_get(maintenance_webadmin, "/healthcheck/checks/RabbitMQEventBusGroups")
    assert groups_check["status"] == "healthy", groups_check

    run, states, summary = run_dag(DAG_ID)
    assert run.state == "success", states
    assert summary["detected"] == {"missingGroups": 0, "unexpectedGroups": 0, "orphanQueues": 0, "orphanMessages": 0}
    assert summary["bound"] == summary["unbound"] == summary["deletedQueues"] == []
    session.execute('DELETE FROM event_dead_letters WHERE "group" = ?', (C,))


def test_an_empty_aggregate_never_unbinds_every_group(maintenance_keyspace, stack, bus):
    declare_bus(bus, [A])      # bound, while no node ever recorded its groups in this keyspace
    run, states, _ = run_dag(DAG_ID)
    assert run.state == "failed" and states["detect"] == "failed" and states["reconcile"] == "upstream_failed"
    state = RegisteredGroups(RabbitMQManagement(stack.rabbitmq_management_url, bus)).state(frozenset())
    assert A in state.registered      # still bound
