"""The memory ``DagRuns`` against the contract the Airflow adapter also passes."""

from __future__ import annotations

import pytest

from mailserver.airflow.memory import MemoryDagRuns, succeed_with
from tests.contract.dag_runs_contract import DagRunsContract

DAG = "solve_message_inconsistencies"


@pytest.fixture
def dag_runs() -> MemoryDagRuns:
    runs = MemoryDagRuns()
    runs.add_dag(DAG, {"dry_run", "rate", "slices", "user", "mailbox_ids"},
                 succeed_with({"processedImapUidEntries": 3, "outcome": "DRY_RUN"}))
    return runs


@pytest.fixture
def dag_id() -> str:
    return DAG


@pytest.fixture
def conf() -> dict:
    return {"dry_run": True}


@pytest.fixture
def declared() -> set[str]:
    return {"dry_run", "rate", "slices"}


@pytest.fixture
def finish_timeout() -> float:
    return 5.0


class TestMemoryDagRuns(DagRunsContract):
    pass
