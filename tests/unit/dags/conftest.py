"""The DAGs under test: the whole folder, or the DAG (and its file as a module) named by a test module's ``DAG_ID``.

DagBag loads DAGs into Airflow's metadata database: the test SQLite database is migrated first (without it
these tests passed only when an earlier test of the session had migrated it).
"""

from __future__ import annotations

import os

import pytest

from tests.support.dag_files import dag_module, parsed_dag


@pytest.fixture(autouse=True)
def _airflow_metadata(airflow_db):
    return airflow_db


@pytest.fixture(scope="module")
def dagbag():
    """Every DAG of the folder as Airflow parses it; no file may fail to import."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    assert bag.import_errors == {}
    return bag


@pytest.fixture(scope="module")
def dag(request):
    return parsed_dag(request.module.DAG_ID)


@pytest.fixture(scope="module")
def module(request):
    return dag_module(request.module.DAG_ID)
