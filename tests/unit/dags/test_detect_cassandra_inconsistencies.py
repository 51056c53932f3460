"""The scan DAG and the scan job agree on the procedures, and every repair they name exists."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest


def scan_dag_module():
    path = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]) / "detect_cassandra_inconsistencies.py"
    spec = importlib.util.spec_from_file_location("detect_cassandra_inconsistencies_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dagbag():
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])


def test_scan_covers_exactly_the_procedures_the_job_knows():
    from spark_apps.jobs.detect_inconsistencies import PROCEDURES

    dag_module = scan_dag_module()
    assert set(dag_module.REPAIR_DAGS) == set(PROCEDURES)
    assert set(dag_module.UNATTENDED_BY_DEFAULT) <= set(PROCEDURES)


def test_every_repair_the_scan_can_trigger_is_a_dag(dagbag):
    dag_module = scan_dag_module()
    assert not dagbag.import_errors
    for name, dag_id in dag_module.REPAIR_DAGS.items():
        assert dagbag.get_dag(dag_id) is not None, f"{name}: no DAG {dag_id}"


def test_every_scanned_procedure_loads_and_has_a_detection(monkeypatch):
    from spark_apps.jobs.detect_inconsistencies import PROCEDURES, default_configured, load_procedure

    # What the Spark operator hands every job (the fast view reads message contents from S3).
    monkeypatch.setenv("S3_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("S3_ACCESS_KEY", "key")
    monkeypatch.setenv("S3_SECRET_KEY", "secret")

    for name in PROCEDURES:
        procedure = load_procedure(name)
        assert callable(procedure.detect)
        assert isinstance(default_configured(procedure), dict), name


def test_scan_arguments_always_mean_a_dry_run():
    from spark_apps.jobs.detect_inconsistencies import parse

    _, _, options, names = parse(["--procedure", "messages", "--procedure", "messages"])
    assert options.dry_run is True
    assert names == ["messages"]
    with pytest.raises(SystemExit):
        parse(["--procedure", "no-such-thing"])
