"""OpenSearch unreachable during delivery, end to end (issue 13): mail is accepted, the indexing
listener's events end in event dead letters after their retries, and once OpenSearch answers again
the ``redeliver_event_dead_letters`` DAG makes the index equal to Cassandra (message ids compared).

The shared OpenSearch is never stopped (other people use it): the server under test reaches it
through a TCP proxy of the test (``tests/support/tcp_proxy.py``) that is closed for the outage (new
connections refused, open ones cut) and reopened afterwards. As the failing-listener test, the server
runs over the maintenance keyspace (the DAG's Spark job scans its dead letters) and a RabbitMQ
virtual host of its own, with short event retries (``MAILSERVER_EVENT_RETRY_*``); index, aliases and
state index are the test's own.
"""

from __future__ import annotations

import smtplib
import urllib.parse
import uuid

import pytest
from opensearchpy import helpers

from mailserver.events.cassandra_dead_letters import CassandraEventDeadLetters
from mailserver.model.address import Username
from mailserver.model.mailbox import MailboxPath
from mailserver.runtime.serve import Server
from mailserver.runtime.settings import ServeSettings
from mailserver.search.config import SearchConfig
from mailserver.search.index import make_client
from mailserver.search.listener import GROUP
from tests.e2e.mailflow.conftest import eventually
from tests.e2e.maintenance.conftest import run_dag
from tests.support.event_bus_maintenance import rabbitmq_connections
from tests.support.mailserver_process import IsolatedVhost, mailet_container_for_tests, server_env
from tests.support.tcp_proxy import TcpProxy

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

DURING_OUTAGE = 5


def indexed_message_ids(client, read_alias: str, mailbox_id: str) -> set[str]:
    client.indices.refresh(index=read_alias)
    return {hit["_source"]["messageId"]
            for hit in helpers.scan(client, index=read_alias, _source=["messageId"],
                                    query={"query": {"term": {"mailboxId": mailbox_id}}})}


def test_mail_delivered_while_opensearch_is_down_is_indexed_after_the_redelivery_dag(
        maintenance_keyspace, maintenance_airflow, stack, monkeypatch, tmp_path, request):
    session = maintenance_keyspace
    tag = uuid.uuid4().hex[:8]
    vhost = IsolatedVhost(stack, f"search-outage-{tag}").__enter__()
    request.addfinalizer(lambda: vhost.__exit__(None, None, None))
    for name, value in rabbitmq_connections(stack, vhost.amqp_url).items():
        monkeypatch.setenv(name, value)
    upstream = urllib.parse.urlsplit(stack.opensearch_url)
    proxy = TcpProxy(upstream.hostname or "127.0.0.1", upstream.port or 9200).open()
    request.addfinalizer(proxy.close)
    index_name, read_alias, write_alias = f"mailbox_outage_{tag}", f"read_outage_{tag}", f"write_outage_{tag}"
    env = server_env(stack, vhost.amqp_url, session.config.keyspace, f"search-outage-{tag}",
                     mailet_container_for_tests(tmp_path / "mailetcontainer.yaml"),
                     MAILSERVER_ROLES="smtp,spooler,listeners",
                     MAILSERVER_EVENT_RETRY_MAX="2", MAILSERVER_EVENT_RETRY_FIRST_BACKOFF_MS="10",
                     OPENSEARCH_URL=proxy.url, OPENSEARCH_INDEX_MAILBOX_NAME=index_name,
                     OPENSEARCH_ALIAS_READ_MAILBOX_NAME=read_alias, OPENSEARCH_ALIAS_WRITE_MAILBOX_NAME=write_alias,
                     OPENSEARCH_STATE_INDEX=f"state_outage_{tag}", OPENSEARCH_NB_SHARDS="1",
                     OPENSEARCH_NB_REPLICA="0", OPENSEARCH_REQUEST_TIMEOUT_SECONDS="5")
    direct = make_client(SearchConfig(urls=(stack.opensearch_url,)), max_retries=3)   # the test's own view
    request.addfinalizer(lambda: direct.indices.delete(index=f"*outage_{tag}*", ignore_unavailable=True,
                                                       expand_wildcards="all"))
    domain = f"outage-{tag}.test"
    user = Username.of(f"alice@{domain}")
    dead_letters = CassandraEventDeadLetters(session)

    def send(n: int) -> None:
        with smtplib.SMTP("127.0.0.1", int(env["MAILSERVER_SMTP_PORT"]), timeout=30) as smtp:
            refused = smtp.sendmail("ada@sender.example", [user.value],
                                    f"Subject: outage {n}\r\nMessage-ID: <{n}.{tag}@sender.example>\r\n\r\n"
                                    f"note number {n}\r\n".encode())
            assert refused == {}   # accepted, whatever the index does

    server = Server(ServeSettings.from_env(env), env).start()
    try:
        backends = server.backends
        assert backends is not None and GROUP in backends.bus.groups
        backends.domains.add(domain)
        backends.users.add_user(user, "secret-pw")
        manager, inbox = backends.mailbox.manager, MailboxPath.inbox(user)
        send(0)
        assert eventually(lambda: manager.mailbox_exists(inbox) and manager.get_messages(inbox), timeout=60)
        mailbox_id = str(manager.get_mailbox(inbox).id)
        assert eventually(lambda: len(indexed_message_ids(direct, read_alias, mailbox_id)) == 1, timeout=60)

        proxy.close()   # OpenSearch unreachable for this server only
        for n in range(1, DURING_OUTAGE + 1):
            send(n)
        assert eventually(lambda: len(manager.get_messages(inbox)) == DURING_OUTAGE + 1, timeout=60)
        assert eventually(lambda: len(dead_letters.insertion_ids(GROUP)) == DURING_OUTAGE, timeout=90), \
            dead_letters.insertion_ids(GROUP)
        assert len(indexed_message_ids(direct, read_alias, mailbox_id)) == 1   # the index missed them

        proxy.open()    # OpenSearch is back
        run, states, summary = run_dag("redeliver_event_dead_letters", {"scope": "group", "group": GROUP})
        assert run.state == "success", states
        assert (summary["successfulRedeliveriesCount"], summary["failedRedeliveriesCount"]) == (DURING_OUTAGE, 0)
        assert dead_letters.insertion_ids(GROUP) == []
        in_cassandra = {str(m.message_id) for m in manager.get_messages(inbox)}
        assert len(in_cassandra) == DURING_OUTAGE + 1
        assert eventually(lambda: indexed_message_ids(direct, read_alias, mailbox_id) == in_cassandra, timeout=60)
    finally:
        server.stop()
