"""The start every DAG shares: ``check_params`` -> ``backends_healthy`` [-> ``broker_healthy``].

* ``check_params``: every param checked before any work (``param_checks.py``);
* ``backends_healthy``: WebAdmin's health of the components the procedure touches, never the global
  status (dead letters or a full queue make it degraded, and must not block the procedure that fixes them);
* ``broker_healthy`` (procedures that publish): the broker of the ``rabbitmq_management`` connection,
  its vhost there and no memory or disk alarm blocking publishers.

``gated_start`` builds and chains them inside a DAG's ``with`` block and returns the last one: the
procedure's own work goes after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mailplatform.param_checks import Rule, check_params_task
from mailplatform.sensors.health import WebAdminHealthSensor
from mailplatform.sensors.rabbitmq_health import RabbitMQHealthSensor

RABBITMQ_CONN_ID = "rabbitmq_management"
CASSANDRA_COMPONENTS = ("Cassandra backend", "ObjectStorage")
GATE_POKE_SECONDS = 30
GATE_TIMEOUT_SECONDS = 30 * 60


def gated_start(rules: Sequence[Rule], live: Sequence[Rule] = (), *, components: Sequence[str],
                broker: bool = False) -> Any:
    """``check_params >> backends_healthy [>> broker_healthy]``; the last task, to chain the work after."""
    checked = check_params_task(rules, live)
    gate = WebAdminHealthSensor(task_id="backends_healthy", components=list(components), deferrable=True,
                                poke_interval=GATE_POKE_SECONDS, timeout=GATE_TIMEOUT_SECONDS)
    checked >> gate
    if not broker:
        return gate
    healthy_broker = RabbitMQHealthSensor(task_id="broker_healthy", rabbitmq_conn_id=RABBITMQ_CONN_ID,
                                          poke_interval=GATE_POKE_SECONDS, timeout=GATE_TIMEOUT_SECONDS)
    gate >> healthy_broker
    return healthy_broker
