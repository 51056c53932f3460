"""``EventDeadLettersHealthCheck`` on James's ``event_dead_letters`` table, on a real Cassandra.

The check looks at the whole table, so it gets a keyspace of its own holding only that table:
the session keyspace is shared, and a later event-bus test may leave dead letters there.
"""

from __future__ import annotations

import uuid
from dataclasses import replace

import pytest

from mailserver.cassandra.schema import TABLES_BY_NAME
from mailserver.cassandra.session import CassandraSession
from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.events.dead_letters_check import CONTAIN_EVENTS, EventDeadLettersHealthCheck
from mailserver.observability.health import HealthCheckRunner, Status
from tests.support.keyspaces import scratch_keyspace

pytestmark = pytest.mark.integration

GROUP = "org.apache.james.mailbox.cassandra.DeleteMessageListener$DeleteMessageListenerGroup"


@pytest.fixture(scope="module")
def dead_letters_session(cassandra_config):
    config = replace(cassandra_config, keyspace=cassandra_config.keyspace + "_dl")
    with scratch_keyspace(config, tables=[TABLES_BY_NAME["event_dead_letters"]], types=()) as session:
        yield session


def test_healthy_when_empty_degraded_with_a_dead_letter_healthy_once_redelivered(dead_letters_session):
    session = dead_letters_session
    check = EventDeadLettersHealthCheck(CassandraEventDeadLetters(session).contain_events)
    assert check.check().status is Status.HEALTHY

    insertion_id = uuid.uuid4()
    session.execute('INSERT INTO event_dead_letters ("group", insertionId, event) VALUES (?, ?, ?)',
                    (GROUP, insertion_id, '{"MailboxDeletion": {}}'))
    result = check.check()
    assert (result.status, result.cause) == (Status.DEGRADED, CONTAIN_EVENTS)

    session.execute('DELETE FROM event_dead_letters WHERE "group" = ? AND insertionId = ?', (GROUP, insertion_id))
    assert check.check().status is Status.HEALTHY


def test_unhealthy_when_cassandra_cannot_answer(dead_letters_session):
    closed = CassandraSession.connect(dead_letters_session.config)
    closed.close()
    result = HealthCheckRunner([EventDeadLettersHealthCheck(CassandraEventDeadLetters(closed).contain_events)]).run()[0]
    assert result.status is Status.UNHEALTHY
    assert result.cause.startswith("Error checking EventDeadLettersHealthCheck: ")
