"""One DAG file of the folder, loaded on its own: as Airflow parses it, or as a plain module."""

from __future__ import annotations

import importlib.util
import os
from types import ModuleType
from typing import Any


def dag_file(dag_id: str) -> str:
    return os.path.join(os.environ["AIRFLOW__CORE__DAGS_FOLDER"], f"{dag_id}.py")


def parsed_dag(dag_id: str) -> Any:
    """The DAG as a DagBag of that file alone parses it (the whole folder is test_dag_integrity.py's)."""
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=dag_file(dag_id))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag(dag_id)


def dag_module(dag_id: str) -> ModuleType:
    """The DAG file imported as a module, for its helper functions."""
    spec = importlib.util.spec_from_file_location(f"{dag_id}_under_test", dag_file(dag_id))
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded
