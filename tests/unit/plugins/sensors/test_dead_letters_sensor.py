"""EventDeadLettersClearedSensor: scope all through WebAdmin's EventDeadLettersHealthCheck; scope checks.

The group and event scopes read Cassandra (one row at most); they run in the redelivery DAG's
end-to-end test (``tests/e2e/maintenance/test_redeliver_event_dead_letters_dag.py``).
"""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout
from mailplatform.sensors.dead_letters import EventDeadLettersClearedSensor

from mailserver.events.dead_letters_check import EventDeadLettersHealthCheck
from tests.unit.webadmin.webadmin_support import make_context

GROUP = "org.apache.james.mailbox.store.quota.ListeningCurrentQuotaUpdater$ListeningCurrentQuotaUpdaterGroup"


def sensor(**kwargs) -> EventDeadLettersClearedSensor:
    return EventDeadLettersClearedSensor(task_id="cleared", poke_interval=0.05, timeout=5, **kwargs)


def test_scope_all_follows_webadmins_dead_letters_check(serve):
    dead_letters = {"present": True}
    serve(make_context(health_checks=[EventDeadLettersHealthCheck(lambda: dead_letters["present"])]))
    probe = sensor(scope="all", group="", insertion_id="")     # the DAG renders absent params as ""
    assert probe.poke({}) is False
    assert "EventDeadLetters contain events" in probe.last_reading
    dead_letters["present"] = False
    assert probe.poke({}) is True


def test_timeout_says_events_may_be_failing_again(serve):
    serve(make_context(health_checks=[EventDeadLettersHealthCheck(lambda: True)]))
    with pytest.raises(AirflowSensorTimeout, match="look at the listener's errors"):
        EventDeadLettersClearedSensor(task_id="cleared", poke_interval=0.05, timeout=0.2).execute({})


@pytest.mark.parametrize(("scope", "group", "insertion_id", "message"), [
    ("everything", "", "", "scope must be one of"),
    ("group", "", "", "scope group needs a group"),
    ("event", GROUP, "None", "needs an insertion id"),
    ("event", GROUP, "42", "needs an insertion id"),
])
def test_a_scope_without_what_it_needs_fails_at_once(scope, group, insertion_id, message):
    with pytest.raises(AirflowException, match=message):
        sensor(scope=scope, group=group, insertion_id=insertion_id).poke({})
