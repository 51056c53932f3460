"""A freshly started Airflow of these tests' own (``tests/support/private_airflow.py``): api-server,
scheduler, dag-processor and triggerer on a new database, whose dag-processor and scheduler read the
``MAILPLATFORM_SCHEDULE__*`` settings these tests enable.

Why not the stack's Airflow: schedules are read from the environment when a DAG file is parsed, so
enabling one means restarting the dag-processor and the scheduler with other settings, which a
shared Airflow must not undergo. To start in less time, its DAG folder holds only the two DAGs with
a schedule (the scan and the purge); its connections are the maintenance world's (its keyspace and
WebAdmin, Spark on ``local[2]``), so a scheduled run that starts before the test deletes it touches
nothing of the stack's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from tests.support.private_airflow import REPO, PrivateAirflow
from tests.support.schedules import ENABLED, SHIPPED_CRONS


@pytest.fixture(scope="package")
def private_airflow(maintenance_airflow, maintenance_webadmin, spark_env,
                    tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAirflow]:
    dags = tmp_path_factory.mktemp("scheduled-dags")
    for dag_id in SHIPPED_CRONS:
        shutil.copy2(REPO / "dags" / f"{dag_id}.py", dags / f"{dag_id}.py")
    # maintenance_airflow put the maintenance world's AIRFLOW_CONN_* into this process's environment.
    airflow = PrivateAirflow(home=tmp_path_factory.mktemp("private-airflow"), base_env=dict(os.environ),
                             dags_folder=dags, settings=dict(ENABLED))
    try:
        yield airflow.start()
    finally:
        airflow.stop()
