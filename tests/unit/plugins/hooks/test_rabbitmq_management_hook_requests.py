"""RabbitMQManagementHook: the connection (vhost, AMQP URL), queue depth, delete-if-empty, alarms, errors."""

from __future__ import annotations

from urllib.parse import quote

import pika
import pytest
from airflow.models.connection import Connection
from mailplatform.hooks.rabbitmq_management import (
    RabbitMQManagementError,
    RabbitMQManagementHook,
    connection_settings,
    queue_depth_of,
)

from include.connections import airflow_connections
from include.stack.endpoints import Endpoints
from include.stack.settings import StackSettings
from tests.support.no_io import connections_while_building
from tests.unit.plugins.rabbitmq_management_server import Broker, connection, serving


@pytest.fixture
def broker(monkeypatch):
    state = Broker(vhosts={"/", "mail/prod"})
    with serving(state) as port:
        monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", connection(port, vhost="mail/prod"))
        yield state


def test_init_does_no_io(monkeypatch):
    attempts, hook = connections_while_building(monkeypatch, RabbitMQManagementHook,
                                                lambda: RabbitMQManagementHook("no_such_connection"))
    assert attempts == []
    assert hook.rabbitmq_conn_id == "no_such_connection"


def test_the_platform_connection_gives_the_stack_vhost_and_amqp_url(monkeypatch):
    monkeypatch.setenv("STACK_AMQP_PASSWORD", "p@ss:w/rd")
    ep = Endpoints.from_settings(StackSettings())
    conns = airflow_connections(ep)
    conn = Connection.from_json(conns["AIRFLOW_CONN_RABBITMQ_MANAGEMENT"], conn_id="rabbitmq_management")
    base_url, auth, vhost, amqp_url = connection_settings(conn)
    assert base_url == ep.rabbitmq_management_url and vhost == "/"
    assert auth[1] == "p@ss:w/rd"                                    # unescaped for HTTP basic auth
    params, expected = pika.URLParameters(amqp_url), pika.URLParameters(ep.amqp_url)
    assert (params.host, params.port, params.virtual_host) == (expected.host, expected.port, "/")
    assert params.credentials.password == "p@ss:w/rd"


def test_a_named_vhost_is_escaped_in_the_amqp_url_and_in_paths(broker):
    broker.queue("JamesMailQueue-workqueue-spool", 7, vhost="mail/prod", unacked=2)
    with RabbitMQManagementHook() as hook:
        assert hook.vhost == "mail/prod"
        assert pika.URLParameters(hook.amqp_url()).virtual_host == "mail/prod"
        assert hook.queue_depth("JamesMailQueue-workqueue-spool") == 9
        assert hook.queue_depth("JamesMailQueue-workqueue-spool", include_unacknowledged=False) == 7
        assert hook.queue_depth("nope") is None
    assert ("GET", f"/api/queues/{quote('mail/prod', safe='')}/JamesMailQueue-workqueue-spool") in broker.requests


def test_depth_of_a_queue_without_statistics_yet():
    assert queue_depth_of({"name": "q"}) == 0
    assert queue_depth_of({"messages_ready": 3, "messages_unacknowledged": 1}) == 4


def test_delete_if_empty_deletes_only_an_empty_queue(broker):
    broker.queue("full", 3, vhost="mail/prod")
    broker.queue("empty", 0, vhost="mail/prod")
    with RabbitMQManagementHook() as hook:
        assert hook.delete_queue_if_empty("full") is False
        assert hook.delete_queue_if_empty("empty") is True
        assert hook.delete_queue_if_empty("empty") is True      # already gone: fine
    assert set(broker.queues) == {("mail/prod", "full")}


def test_alarms_and_vhost(broker):
    with RabbitMQManagementHook() as hook:
        assert hook.alarms() == [] and hook.vhost_exists()
        broker.alarms.append({"node": "rabbit@mq1", "resource": "memory"})
        assert hook.alarms() == ["memory alarm on rabbit@mq1"]
        broker.vhosts.discard("mail/prod")
        assert hook.vhost_exists() is False


def test_errors_carry_rabbitmq_reason(broker, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", connection(broker.port, password="wrong"))
    with RabbitMQManagementHook() as hook, pytest.raises(RabbitMQManagementError, match="401: Login failed"):
        hook.bindings()
