"""Nothing an operator does by exploring the UI starts work they did not ask for.

No DAG is scheduled as shipped; an enabled schedule never starts a run for a time already passed
(unpausing a DAG, which the trigger form does before it validates, starts nothing); the scan starts
no repair unless allowed; every DAG is owned by the team and alerts through one connection.
"""

from __future__ import annotations

import pendulum
import pytest

from tests.support.dag_files import dag_module

REPAIRS_AND_PURGES = ("detect_cassandra_inconsistencies", "purge_deleted_messages_vault")


def test_no_dag_is_scheduled_as_shipped(dagbag):
    from mailplatform.timetables import BackfillOnlyTimetable

    for dag_id, dag in dagbag.dags.items():
        assert dag.catchup is False, dag_id
        timetable = dag.timetable
        assert type(timetable).__name__ == "NullTimetable" or isinstance(timetable, BackfillOnlyTimetable), \
            f"{dag_id} runs by itself as shipped: {timetable!r}"


def test_a_backfill_only_timetable_never_schedules_but_backfills_by_month():
    from airflow.timetables.base import TimeRestriction
    from mailplatform.timetables import BackfillOnlyTimetable

    timetable = BackfillOnlyTimetable("@monthly", timezone="UTC")
    long_ago = pendulum.datetime(2015, 1, 1, tz="UTC")
    assert timetable.next_dagrun_info(last_automated_data_interval=None,
                                      restriction=TimeRestriction(long_ago, None, catchup=False)) is None
    backfill = timetable.next_dagrun_info(last_automated_data_interval=None,
                                          restriction=TimeRestriction(long_ago, None, catchup=True))
    assert backfill.data_interval.start == long_ago and backfill.data_interval.end == long_ago.add(months=1)


@pytest.mark.parametrize("cron", ["0 3 1 * *", "0 2 * * *", "*/5 * * * *"])
def test_an_enabled_schedule_never_starts_a_run_for_a_time_already_passed(cron):
    """What the scheduler asks when a DAG is unpaused: the next run must lie ahead, not behind."""
    from airflow.timetables.base import TimeRestriction
    from mailplatform.timetables import PunctualCronTimetable

    timetable = PunctualCronTimetable(cron, timezone="UTC")
    now = pendulum.now("UTC")
    first = timetable.next_dagrun_info(last_automated_data_interval=None,
                                       restriction=TimeRestriction(now.subtract(years=1), None, catchup=False))
    assert first.run_after >= now.subtract(seconds=1)
    after_it = timetable.next_dagrun_info(last_automated_data_interval=first.data_interval,
                                          restriction=TimeRestriction(now.subtract(years=1), None, catchup=False))
    assert after_it.run_after > first.run_after   # and then at each point to come


def test_enabled_timetables_survive_serialization(monkeypatch):
    """The scheduler and the UI read the serialized DAG: the timetable class must come back (plugin)."""
    from airflow.serialization.serialized_objects import DagSerialization
    from mailplatform.timetables import PunctualCronTimetable

    monkeypatch.setenv("MAILPLATFORM_SCHEDULE__DETECT_CASSANDRA_INCONSISTENCIES", "on")
    dag = dag_module("detect_cassandra_inconsistencies").dag
    again = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    assert isinstance(again.timetable, PunctualCronTimetable) and again.timetable.summary == "0 2 * * *"
    assert "never for a time already passed" in again.timetable.description


@pytest.mark.parametrize("dag_id", REPAIRS_AND_PURGES)
def test_a_schedule_is_enabled_or_replaced_by_its_environment_variable(monkeypatch, dag_id):
    variable = "MAILPLATFORM_SCHEDULE__" + dag_id.upper()
    monkeypatch.setenv(variable, "*/2 * * * *")
    dag = dag_module(dag_id).dag
    assert dag.timetable.summary == "*/2 * * * *" and "scheduled:" in dag.description
    monkeypatch.setenv(variable, "every tuesday")
    with pytest.raises(ValueError, match=variable):
        dag_module(dag_id)


def test_the_scan_starts_no_repair_unless_allowed_and_then_only_what_it_found(monkeypatch, dagbag):
    shipped = dagbag.get_dag("detect_cassandra_inconsistencies")
    assert shipped.params["trigger_repairs"] is False and shipped.params["unattended_repairs"] == []
    assert "report only" in shipped.description
    monkeypatch.setenv("MAILPLATFORM_SCAN_REPAIRS", "messages,fast_view")
    allowed = dag_module("detect_cassandra_inconsistencies")
    assert allowed.dag.params["trigger_repairs"] is True
    assert allowed.dag.params["unattended_repairs"] == ["fast_view", "messages"]
    found = {"total": 2, "sample": [{"kind": "orphanImapUidEntry", "mailboxid": "m2"},
                                    {"kind": "orphanMessageIdEntry", "mailboxid": "m1"}]}
    assert allowed.scope_of("messages", found) == {"mailbox_ids": ["m1", "m2"]}
    assert allowed.scope_of("messages", {**found, "total": 5000}) == {}   # the sample is cut: no narrower scope
    assert allowed.scope_of("fast_view", {"total": 1, "sample": [{"user": "bob@x.org"}]}) == {"user": "bob@x.org"}


def test_every_dag_is_owned_by_the_team_described_and_alerts(dagbag):
    from mailplatform.notifiers import PlatformAlertNotifier

    for dag_id, dag in dagbag.dags.items():
        assert dag.description and len(dag.description) > 20, dag_id
        assert dag.owner == "mail-ops", dag_id
        assert any(isinstance(c, PlatformAlertNotifier) for c in dag.on_failure_callback), dag_id
        for task in dag.tasks:
            assert any(isinstance(c, PlatformAlertNotifier) for c in task.on_failure_callback), (dag_id, task.task_id)


def test_the_purge_description_says_what_the_next_scheduled_run_does(monkeypatch):
    monkeypatch.setenv("MAILPLATFORM_SCHEDULE__PURGE_DELETED_MESSAGES_VAULT", "on")
    description = dag_module("purge_deleted_messages_vault").dag.description
    assert "scheduled: at 03:00, on day 1 of the month UTC" in description
    assert "DELETES for real" in description

