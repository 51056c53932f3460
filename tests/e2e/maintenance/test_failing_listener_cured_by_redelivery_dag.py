"""A listener that fails on every retry, end to end: dead letter, degraded health, redelivery DAG, healthy.

A mail server (SMTP, spooler, listeners) runs over the maintenance keyspace, so the maintenance
WebAdmin's ``EventDeadLettersHealthCheck`` sees its dead letters, and over a RabbitMQ virtual host
of its own (its groups' queues and bindings never meet the other event-bus DAG tests'). The
current-quota listener's counter update is made to fail on every attempt through the fault seam;
the event ends in ``event_dead_letters``, stays there over a restart of the server, and the
``redeliver_event_dead_letters`` DAG hands it back to the (now healthy) listener.
"""

from __future__ import annotations

import json
import smtplib
import urllib.error
import urllib.parse
import urllib.request
import uuid

import pytest

from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.mailbox.listeners import CurrentQuotaUpdater
from mailserver.model.address import Username
from mailserver.model.quota import QuotaRoot
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from tests.e2e.mailflow.conftest import eventually
from tests.e2e.maintenance.conftest import run_dag
from tests.support.event_bus_maintenance import rabbitmq_connections
from tests.support.mailserver_process import (
    WEBADMIN_PASSWORD,
    IsolatedVhost,
    mailet_container_for_tests,
    server_env,
)

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

QUOTA = CurrentQuotaUpdater.group
CHECK = "EventDeadLettersHealthCheck"


def health(webadmin_url: str) -> str:
    request = urllib.request.Request(f"{webadmin_url}/healthcheck/checks/{urllib.parse.quote(CHECK)}",
                                     headers={"Password": WEBADMIN_PASSWORD})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)["status"]
    except urllib.error.HTTPError as error:
        return json.load(error)["status"]


def quota_usage(session, user: str) -> tuple[int, int]:
    rows = session.execute("SELECT quotaType, currentValue FROM quotaCurrentValue WHERE identifier = ? "
                           "AND quotaComponent = 'MAILBOX'", (QuotaRoot.for_user(Username.of(user)).as_string(),))
    values = {r["quotatype"]: r["currentvalue"] for r in rows}
    return values.get("count", 0), values.get("size", 0)


def test_a_failing_listener_is_dead_lettered_kept_over_a_restart_and_cured_by_the_dag(
        maintenance_keyspace, maintenance_airflow, maintenance_webadmin, stack, monkeypatch, tmp_path, request):
    session = maintenance_keyspace
    tag = uuid.uuid4().hex[:8]
    vhost = IsolatedVhost(stack, f"listener-{tag}").__enter__()
    request.addfinalizer(lambda: vhost.__exit__(None, None, None))
    amqp_url = vhost.amqp_url
    for name, value in rabbitmq_connections(stack, amqp_url).items():
        monkeypatch.setenv(name, value)
    env = server_env(stack, amqp_url, session.config.keyspace, f"listener-{tag}",
                     mailet_container_for_tests(tmp_path / "mailetcontainer.yaml"),
                     MAILSERVER_ROLES="smtp,spooler,listeners",
                     MAILSERVER_EVENT_RETRY_MAX="2", MAILSERVER_EVENT_RETRY_FIRST_BACKOFF_MS="10")
    env.pop("OPENSEARCH_URL", None)   # only the mailbox listeners of this test's story
    user = f"quota-{tag}@listener-{tag}.test"
    dead_letters = CassandraEventDeadLetters(session)

    server = Server(ServeSettings.from_env(env), env).start()
    try:
        backends = server.backends
        assert backends is not None
        backends.domains.add(f"listener-{tag}.test")
        backends.users.add_user(Username.of(user), "pw")
        assert health(maintenance_webadmin.webadmin_url) == "healthy"
        # Every attempt (the first and both retries) of the quota counter update fails.
        rule = backends.session.faults.fail("quotaCurrentValue", kind="UPDATE", times=3)
        with smtplib.SMTP("127.0.0.1", int(env["MAILSERVER_SMTP_PORT"]), timeout=30) as client:
            client.sendmail("someone@remote.example", [user], b"Subject: quota\r\n\r\nhello\r\n")
        assert eventually(lambda: dead_letters.insertion_ids(QUOTA), timeout=60), server.backends
        assert rule.hits == 3
    finally:
        server.stop()

    assert quota_usage(session, user) == (0, 0)        # the projection missed the mail...
    restarted = Server(ServeSettings.from_env(env), env).start()
    try:
        (insertion_id,) = dead_letters.insertion_ids(QUOTA)   # ...whose event survived the restart
        assert dead_letters.get(QUOTA, insertion_id).event().user == Username.of(user)
        assert health(maintenance_webadmin.webadmin_url) == "degraded"

        run, states, summary = run_dag("redeliver_event_dead_letters", {"scope": "group", "group": QUOTA})

        assert run.state == "success", states
        assert set(states.values()) == {"success"}, states
        assert (summary["successfulRedeliveriesCount"], summary["failedRedeliveriesCount"]) == (1, 0)
        assert dead_letters.insertion_ids(QUOTA) == []
        usage = eventually(lambda: (u := quota_usage(session, user))[0] and u, timeout=60)
        assert usage[0] == 1 and usage[1] > 0
        assert health(maintenance_webadmin.webadmin_url) == "healthy"
    finally:
        restarted.stop()
