"""The stack's real Airflow (api-server, scheduler with LocalExecutor on PostgreSQL, dag-processor),
brought up through the stack manager when it is not running, and its message-inconsistency DAG
unpaused. DAG runs there are real: Spark on ``james_keyspace``, a few minutes each.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from include.stack.endpoints import Endpoints
from include.stack.settings import StackSettings
from mailserver.airflow.http import HttpDagRuns
from mailserver.airflow.settings import AirflowSettings
from mailserver.cassandra.config import CassandraConfig
from mailserver.cassandra.session import CassandraSession
from tests.support.airflow_stack import STACK_KEYSPACE, stack_airflow, unpause

DAG = "solve_message_inconsistencies"


@pytest.fixture(scope="session")
def airflow_settings() -> AirflowSettings:
    settings = stack_airflow()
    unpause(settings, DAG)
    return settings


@pytest.fixture
def http_dag_runs(airflow_settings) -> Iterator[HttpDagRuns]:
    runs = HttpDagRuns(airflow_settings)
    yield runs
    runs.close()


@pytest.fixture(scope="session")
def stack_keyspace(airflow_settings) -> Iterator[CassandraSession]:
    """The keyspace the stack's Airflow connections point at."""
    ep = Endpoints.from_settings(StackSettings())
    session = CassandraSession.connect(CassandraConfig(hosts=tuple(ep.cassandra_hosts.split(",")),
                                                       port=ep.cassandra_port, keyspace=STACK_KEYSPACE))
    yield session
    session.close()
