"""The table from James's routes to DAG runs agrees with the DAG files: each DAG exists, declares
every param the table may send it, and names James's task type for its report.

This is the build-time half of "no DAG param is ever sent silently"; the run-time half is
``trigger_checked`` (tested in the DAG-run task tests and the contract).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mailserver.airflow.procedures import DRY_RUN, PROCEDURES, DagProcedure, Source

DAGS_DIR = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"])


@pytest.fixture(scope="module")
def dagbag():
    try:
        from airflow.dag_processing.dagbag import DagBag
    except ImportError:  # Airflow < 3.3
        from airflow.models.dagbag import DagBag
    return DagBag(dag_folder=str(DAGS_DIR))


@pytest.mark.parametrize("procedure", list(PROCEDURES.values()), ids=list(PROCEDURES))
def test_the_dag_declares_every_param_the_route_may_send(dagbag, procedure: DagProcedure):
    dag = dagbag.get_dag(procedure.dag_id)
    assert dag is not None, f"no DAG {procedure.dag_id} in {DAGS_DIR} for James's {procedure.task_type}"
    sent = {p.dag_param for p in procedure.params if p.dag_param is not None}
    missing = sent - set(dag.params)
    assert not missing, f"{procedure.dag_id} does not declare {sorted(missing)}"


def test_every_request_parameter_feeds_one_dag_param():
    for procedure in PROCEDURES.values():
        names = [(p.source, p.request) for p in procedure.params]
        targets = [p.dag_param for p in procedure.params if p.dag_param is not None]
        assert len(set(names)) == len(names) and len(set(targets)) == len(targets), procedure.task_type


def test_conf_maps_james_names_and_ignores_the_others():
    message = PROCEDURES["solve-message-inconsistencies"]
    assert message.conf({"messagesPerSecond": ["250"], "dryRun": ["TRUE"], "mode": ["rebuildAll"],
                         "rate": ["5"], "dry_run": ["true"]}) == {"rate": 250, "dry_run": True}
    assert message.conf({"messagesPerSecond": [""]}) == {}   # empty = absent, as James's parser
    user = PROCEDURES["RecomputeUserFastViewProjectionItemsTask"]
    assert user.conf({"username": ["mallory@x.tld"]}, {"username": "bob@x.tld"}) == {"user": "bob@x.tld"}
    assert user.information({"user": "bob@x.tld"}) == {"username": "bob@x.tld"}
    migration = PROCEDURES["cassandra-migration"]
    assert migration.conf({}, body="15") == {"target_version": 15}
    assert migration.information({"target_version": 15}) == {"toVersion": 15}
    assert DRY_RUN not in migration.params and all(p.source is Source.BODY for p in migration.params)


@pytest.mark.parametrize(("query", "message"), [
    ({"messagesPerSecond": ["0"]}, "'messagesPerSecond' must be strictly positive"),
    ({"messagesPerSecond": ["1.5"]}, 'For input string: "1.5"'),
    ({"dryRun": ["1"]}, "'dryRun' must be a boolean"),
])
def test_bad_values_carry_james_messages(query, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        PROCEDURES["solve-message-inconsistencies"].conf(query)
