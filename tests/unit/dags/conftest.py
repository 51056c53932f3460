"""DagBag loads DAGs into Airflow's metadata database: migrate the test SQLite database first.

Without it these tests passed only when an earlier test of the session had migrated it.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _airflow_metadata(airflow_db):
    return airflow_db
