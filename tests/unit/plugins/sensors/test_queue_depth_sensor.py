"""QueueDepthSensor (a queue drained to at most N messages) and RabbitMQHealthSensor (vhost there, no alarm)."""

from __future__ import annotations

import pytest
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout
from mailplatform.sensors.queue_depth import QueueDepthSensor, drained
from mailplatform.sensors.rabbitmq_health import RabbitMQHealthSensor

from tests.unit.plugins.rabbitmq_management_server import Broker, connection, serving

SPOOL = "JamesMailQueue-workqueue-spool"


@pytest.fixture
def broker(monkeypatch):
    state = Broker()
    with serving(state) as port:
        monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", connection(port))
        yield state


def sensor(**kwargs) -> QueueDepthSensor:
    return QueueDepthSensor(task_id="drained", poke_interval=0.05, timeout=5, **kwargs)


def test_drained_is_at_most_the_limit_and_a_missing_queue_only_when_allowed():
    assert drained(0, 0) and drained(5, 5) and not drained(6, 5)
    assert not drained(None, 10) and drained(None, 0, missing_ok=True)


def test_poke_follows_the_depth_unacknowledged_messages_count_by_default(broker):
    broker.queue(SPOOL, 3, unacked=2)
    assert sensor(queue_name=SPOOL, max_messages=4).poke({}) is False
    assert sensor(queue_name=SPOOL, max_messages=5).poke({}) is True
    assert sensor(queue_name=SPOOL, max_messages=3, include_unacknowledged=False).poke({}) is True
    broker.queue(SPOOL, 0)
    assert sensor(queue_name=SPOOL).poke({}) is True


def test_templated_limit_is_validated(broker):
    broker.queue(SPOOL, 0)
    assert sensor(queue_name=SPOOL, max_messages="0").poke({}) is True     # a rendered template is a string
    with pytest.raises(AirflowException, match="max_messages must be an integer"):
        sensor(queue_name=SPOOL, max_messages="many").poke({})
    with pytest.raises(AirflowException, match=">= 0"):
        sensor(queue_name=SPOOL, max_messages=-1).poke({})


def test_a_missing_queue_fails_at_once_unless_missing_ok(broker):
    with pytest.raises(AirflowException, match="does not exist in vhost '/'"):
        sensor(queue_name="nope").poke({})
    assert sensor(queue_name="nope", missing_ok=True).poke({}) is True


def test_unreachable_management_is_not_drained_yet(monkeypatch, closed_port):
    monkeypatch.setenv("AIRFLOW_CONN_RABBITMQ_MANAGEMENT", connection(closed_port))
    probe = sensor(queue_name=SPOOL)
    assert probe.poke({}) is False and probe.last_reading.startswith("management API unreachable")


def test_timeout_names_the_last_depth(broker):
    broker.queue(SPOOL, 12)
    with pytest.raises(AirflowSensorTimeout, match=f"Queue {SPOOL} not drained to 10: 12 messages"):
        QueueDepthSensor(task_id="drained", queue_name=SPOOL, max_messages=10, poke_interval=0.05,
                         timeout=0.2).execute({})


def test_broker_health_vhost_and_alarms(broker):
    probe = RabbitMQHealthSensor(task_id="broker", poke_interval=0.05, timeout=5)
    assert probe.poke({}) is True
    broker.alarms.append({"node": "rabbit@localhost", "resource": "disk"})
    assert probe.poke({}) is False and probe.last_problem == "disk alarm on rabbit@localhost"
    broker.vhosts.clear()
    with pytest.raises(AirflowException, match="vhost '/' does not exist"):
        probe.poke({})


def test_the_queue_is_queue_name_so_the_executor_queue_stays_airflows_and_the_dag_serializes():
    from airflow.sdk import DAG
    from airflow.serialization.serialized_objects import DagSerialization

    with DAG("queue_gate", schedule=None) as dag:
        gate = QueueDepthSensor(task_id="drained", queue_name="{{ params.q }}", max_messages="{{ params.n }}",
                                params={"q": SPOOL, "n": 0})
    assert gate.queue == "default" and gate.queue_name == "{{ params.q }}"
    serialized = DagSerialization.to_dict(dag)   # raised "Cannot template BaseOperator field: queue"
    assert serialized["dag"]["tasks"][0]["__var"]["queue_name"] == "{{ params.q }}"
