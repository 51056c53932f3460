"""``EventDeadLettersHealthCheck``: James's name and causes, one cheap query, every source consulted."""

from __future__ import annotations

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from mailserver.events.api import EventListener
from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.events.dead_letters_check import CONTAIN_EVENTS, EventDeadLettersHealthCheck
from mailserver.events.in_process import InProcessEventBus
from mailserver.model.address import Username
from mailserver.model.events import MailboxAdded, MailboxEvent
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import MailboxPath
from mailserver.observability.health import Status
from mailserver.runtime.backends import dead_letters_check
from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import make_context


class FakeSession:
    """Records the statements; answers the dead-letter query with ``rows``."""

    def __init__(self, rows: list[dict] | None = None, error: Exception | None = None) -> None:
        self.rows = rows or []
        self.error = error
        self.statements: list[str] = []

    def one(self, cql: str, params=None, *, strong: bool = False):
        self.statements.append(cql)
        if self.error is not None:
            raise self.error
        return self.rows[0] if self.rows else None


def test_name_and_causes_are_james():
    assert EventDeadLettersHealthCheck(lambda: False).name == "EventDeadLettersHealthCheck"
    degraded = EventDeadLettersHealthCheck(lambda: True).check()
    assert (degraded.status, degraded.cause) == (
        Status.DEGRADED, "EventDeadLetters contain events. This might indicate transient failure on event processing.")
    healthy = EventDeadLettersHealthCheck(lambda: False).check()
    assert (healthy.status, healthy.cause) == (Status.HEALTHY, None)


def test_the_cassandra_source_is_one_select_limit_1_on_the_whole_table():
    empty = FakeSession()
    assert CassandraEventDeadLetters(empty).contain_events() is False
    assert empty.statements == ["SELECT event FROM event_dead_letters LIMIT 1"]
    assert CassandraEventDeadLetters(FakeSession([{"event": "{}"}])).contain_events() is True


def test_a_failing_source_is_unhealthy_with_james_cause():
    failing = CassandraEventDeadLetters(FakeSession(error=TimeoutError("no coordinator")))
    result = EventDeadLettersHealthCheck(failing.contain_events).check()
    assert result.status is Status.UNHEALTHY
    assert result.cause == "Error checking EventDeadLettersHealthCheck: TimeoutError: no coordinator"


class Failing(EventListener):
    group = "org.apache.james.mailbox.test.FailingListener$FailingListenerGroup"

    def handle(self, event: MailboxEvent) -> None:
        raise RuntimeError("listener bug")


def test_server_wiring_sees_cassandra_and_the_in_process_bus():
    bus = InProcessEventBus(retries=0)
    check = dead_letters_check(FakeSession(), bus)   # type: ignore[arg-type]
    assert check.check().status is Status.HEALTHY
    bus.register(Failing())
    bus.dispatch(sample_event())
    assert bus.dead_letters.contain_events()
    assert (check.check().status, check.check().cause) == (Status.DEGRADED, CONTAIN_EVENTS)
    # And the cluster-wide table alone is enough.
    assert dead_letters_check(FakeSession([{"event": "{}"}]), InProcessEventBus()).check().status is Status.DEGRADED


def sample_event() -> MailboxEvent:
    user = Username.of("alice@d.tld")
    return MailboxAdded(user=user, path=MailboxPath.of(user, "INBOX"), mailbox_id=MailboxId.generate())


def test_served_degraded_200_relaxed_503_strict():
    client = TestClient(create_app(make_context(health_checks=[EventDeadLettersHealthCheck(lambda: True)])))
    relaxed = client.get("/healthcheck/checks/EventDeadLettersHealthCheck")
    assert (relaxed.status_code, relaxed.json()["status"], relaxed.json()["cause"]) == (200, "degraded", CONTAIN_EVENTS)
    assert client.get("/healthcheck/checks/EventDeadLettersHealthCheck?strict").status_code == 503
    assert client.get("/healthcheck").json()["status"] == "degraded"
