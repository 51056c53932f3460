"""The RabbitMQ management hook and its sensors on the real broker, in a vhost of their own (a "/" in its name).

The connection comes from ``include/connections.py`` as Airflow builds it; the depth seen through the
management API follows the broker's statistics (refreshed every few seconds), so the test waits for it.
"""

from __future__ import annotations

import dataclasses
import uuid

import pika
import pytest
from mailplatform.hooks.rabbitmq_management import RabbitMQManagementHook
from mailplatform.sensors.queue_depth import QueueDepthSensor
from mailplatform.sensors.rabbitmq_health import RabbitMQHealthSensor

from include.connections import airflow_connections
from mailserver.events.registered_groups import RegisteredGroups
from tests.support.event_bus_maintenance import NAMES, declare_bus, group_name, publish_raw, take_all
from tests.support.events import eventually
from tests.support.mailserver_process import IsolatedVhost

pytestmark = pytest.mark.integration

QUEUE = "JamesMailQueue-workqueue-spool"


@pytest.fixture
def vhost(stack, monkeypatch):
    with IsolatedVhost(stack, f"mgmt/{uuid.uuid4().hex[:8]}") as isolated:
        conns = airflow_connections(dataclasses.replace(stack, amqp_url=isolated.amqp_url))
        monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", conns["AIRFLOW_CONN_RABBITMQ_MANAGEMENT"])
        yield isolated


def declare_queue(amqp_url: str, name: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    try:
        connection.channel().queue_declare(name, durable=True)
    finally:
        connection.close()


def test_depth_sensor_and_delete_if_empty_on_the_real_broker(vhost):
    declare_queue(vhost.amqp_url, QUEUE)
    publish_raw(vhost.amqp_url, "", [f"mail {i}" for i in range(5)], routing_key=QUEUE)
    gate = QueueDepthSensor(task_id="drained", queue_name=QUEUE, max_messages=2, poke_interval=0.5, timeout=30)
    with RabbitMQManagementHook() as hook:
        assert hook.vhost == vhost.name and pika.URLParameters(hook.amqp_url()).virtual_host == vhost.name
        eventually(lambda: hook.queue_depth(QUEUE) == 5, timeout=30, interval=0.5)
        assert gate.poke({}) is False
        assert hook.delete_queue_if_empty(QUEUE) is False          # 5 messages: kept
        assert hook.queue(QUEUE) is not None
        assert len(take_all(vhost.amqp_url, QUEUE)) == 5
        eventually(lambda: gate.poke({}), timeout=30, interval=0.5)
        assert hook.delete_queue_if_empty(QUEUE) is True and hook.queue(QUEUE) is None
    assert RabbitMQHealthSensor(task_id="broker", poke_interval=0.5, timeout=5).poke({}) is True


def test_registered_groups_read_through_the_hook(vhost):
    a, c = group_name("A"), group_name("C")
    topology = declare_bus(vhost.amqp_url, [a, c])
    topology.unbind_groups([c])
    with RabbitMQManagementHook() as hook:
        state = RegisteredGroups(hook).state(frozenset({a, group_name("B")}))
    assert (state.missing, state.unexpected) == ([group_name("B")], [])
    assert [q.group for q in state.orphans] == [c] and NAMES.work_queue(c).endswith(c)
