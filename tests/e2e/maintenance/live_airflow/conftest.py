"""A freshly started platform of the tests' own: a real Airflow (api-server, scheduler, dag-processor,
triggerer) on a new database, with the repository's DAGs, whose connections are the maintenance
world's (its keyspace and WebAdmin, Spark on ``local[2]``). One per package: every test here starts
from the DAGs as shipped, paused, and leaves them paused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.private_airflow import PrivateAirflow


@pytest.fixture(scope="package")
def live_airflow(maintenance_airflow, maintenance_webadmin, spark_env,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAirflow]:
    # maintenance_airflow put the maintenance world's AIRFLOW_CONN_* into this process's environment.
    airflow = PrivateAirflow(home=tmp_path_factory.mktemp("live-airflow"), base_env=dict(os.environ))
    try:
        yield airflow.start()
    finally:
        airflow.stop()
