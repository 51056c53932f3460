"""``DagRunTask``: a James task following an Airflow DAG run, on the memory ``DagRuns``.

Tasks are submitted through the task manager and run by a real worker (memory store), so what
is asserted is what WebAdmin's task view shows: status and ``additionalInformation``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mailserver.airflow.api import DagRunState
from mailserver.airflow.memory import MemoryDagRuns, succeed_with
from mailserver.airflow.procedures import CASSANDRA_MIGRATION, SOLVE_MESSAGE_INCONSISTENCIES
from mailserver.tasks.api import TaskStatus
from mailserver.tasks.builtin.dag_run import RUN_ID_PREFIX, DagRunTask, Polling
from mailserver.tasks.builtin.registration import register_builtin
from mailserver.tasks.manager import TaskManager
from mailserver.tasks.memory import MemoryTaskStore
from mailserver.tasks.registry import TaskRegistry
from mailserver.tasks.worker import TaskWorker
from tests.contract.task_manager_contract import eventually

DAG = SOLVE_MESSAGE_INCONSISTENCIES.dag_id
PARAMS = {"dry_run", "rate", "slices", "user", "mailbox_ids"}
REPORT = {"type": "solve_message_inconsistencies", "timestamp": "2026-01-01T00:00:00+00:00",
          "processedImapUidEntries": 90, "processedMessageIdEntries": 89, "addedMessageIdEntries": 4,
          "updatedMessageIdEntries": 2, "removedMessageIdEntries": 3, "outcome": "COMPLETED"}
WAIT = 20.0


@pytest.fixture
def airflow() -> MemoryDagRuns:
    runs = MemoryDagRuns(base_url="http://airflow.test:8080")
    runs.add_dag(DAG, PARAMS, succeed_with(REPORT))
    return runs


@pytest.fixture
def manager(airflow) -> Iterator[TaskManager]:
    store = MemoryTaskStore()
    registry = register_builtin(TaskRegistry(), dag_runs=airflow, polling=Polling(0.01, unreachable_timeout=0.5))
    with TaskWorker(store, registry, "node-1", poll_interval=0.01, heartbeat_interval=0.02):
        yield TaskManager(store, "node-1")


def submit(manager: TaskManager, airflow: MemoryDagRuns, conf: dict | None = None, procedure=None):
    task = DagRunTask.submit(airflow, procedure or SOLVE_MESSAGE_INCONSISTENCIES, conf or {})
    return manager.submit(task), task.run_id


def test_a_successful_run_completes_the_task_with_the_report(manager, airflow):
    task_id, run_id = submit(manager, airflow, {"rate": 100})
    details = manager.await_(task_id, WAIT)
    assert (details.type, details.status) == ("solve-message-inconsistencies", TaskStatus.COMPLETED)
    info = details.additional_information
    # James's envelope: its own type and timestamp, not the job's.
    assert info["type"] == "solve-message-inconsistencies" and info["timestamp"] != REPORT["timestamp"]
    assert {k: info[k] for k in ("processedImapUidEntries", "addedMessageIdEntries", "updatedMessageIdEntries",
                                 "removedMessageIdEntries", "outcome")} == \
        {"processedImapUidEntries": 90, "addedMessageIdEntries": 4, "updatedMessageIdEntries": 2,
         "removedMessageIdEntries": 3, "outcome": "COMPLETED"}
    assert info["runningOptions"] == {"rate": 100}   # the conf the DAG run received
    assert (info["dagId"], info["dagRunId"], info["dagRunState"]) == (DAG, run_id, "success")
    assert info["airflowUrl"] == f"http://airflow.test:8080/dags/{DAG}/runs/{run_id}"
    assert "error" not in info
    assert run_id.startswith(RUN_ID_PREFIX)
    assert [(r.dag_id, r.run_id, dict(r.conf)) for r in airflow.triggered] == [(DAG, run_id, {"rate": 100})]


def test_a_failed_run_fails_the_task_and_keeps_its_report(manager, airflow):
    airflow.add_dag(DAG, PARAMS, lambda conf: (DagRunState.FAILED, {**REPORT, "outcome": "PARTIAL"}))
    task_id, _ = submit(manager, airflow)
    details = manager.await_(task_id, WAIT)
    assert details.status is TaskStatus.FAILED and details.failed_date is not None
    info = details.additional_information
    assert (info["outcome"], info["removedMessageIdEntries"], info["dagRunState"]) == ("PARTIAL", 3, "failed")


def test_a_failed_run_without_report_says_where_to_look(manager, airflow):
    airflow.add_dag(DAG, PARAMS, lambda conf: (DagRunState.FAILED, None))
    task_id, _ = submit(manager, airflow)
    details = manager.await_(task_id, WAIT)
    assert details.status is TaskStatus.FAILED
    assert details.additional_information["dagRunState"] == "failed"
    assert "processedImapUidEntries" not in details.additional_information
    assert "task logs in Airflow" in details.additional_information["error"]


def test_canceling_the_task_marks_the_dag_run_failed(manager, airflow):
    airflow.add_dag(DAG, PARAMS, succeed_with(REPORT), hold=True)
    task_id, run_id = submit(manager, airflow)
    eventually(lambda: manager.get(task_id).status is TaskStatus.IN_PROGRESS and airflow.triggered, WAIT)
    eventually(lambda: manager.get(task_id).additional_information["dagRunState"] == "running", WAIT)
    manager.cancel(task_id)
    details = manager.await_(task_id, WAIT)
    assert details.status is TaskStatus.CANCELLED
    assert airflow.get(DAG, run_id).state is DagRunState.FAILED
    assert details.additional_information["dagRunState"] == "failed"


def test_the_task_view_follows_the_run_while_it_runs(manager, airflow):
    airflow.add_dag(DAG, PARAMS, succeed_with(REPORT), hold=True)
    task_id, run_id = submit(manager, airflow)
    eventually(lambda: manager.get(task_id).additional_information["dagRunState"] == "running", WAIT)
    assert manager.get(task_id).additional_information["dagRunId"] == run_id
    airflow.dags[DAG].hold = False
    assert manager.await_(task_id, WAIT).additional_information["dagRunState"] == "success"


@pytest.mark.parametrize(("change", "error"), [
    (lambda a: setattr(a.dags[DAG], "paused", True), "is paused in Airflow"),
    (lambda a: a.dags.pop(DAG), "Airflow has no DAG solve_message_inconsistencies"),
])
def test_a_run_that_cannot_start_fails_the_task_at_once(manager, airflow, change, error):
    change(airflow)
    task_id, _ = submit(manager, airflow)
    details = manager.await_(task_id, WAIT)
    assert details.status is TaskStatus.FAILED
    assert error in details.additional_information["error"]
    assert airflow.triggered == []


def test_a_conf_key_the_dag_does_not_declare_is_never_sent(manager, airflow):
    task_id, _ = submit(manager, airflow, {"rate": 5, "messages_per_second": 5})
    details = manager.await_(task_id, WAIT)
    assert details.status is TaskStatus.FAILED
    assert "declares no param messages_per_second" in details.additional_information["error"]
    assert airflow.triggered == []


def test_airflow_unreachable_for_a_while_is_tolerated(manager, airflow):
    airflow.unreachable = 5   # a few calls fail, well within the 0.5 s tolerance
    task_id, _ = submit(manager, airflow)
    assert manager.await_(task_id, WAIT).status is TaskStatus.COMPLETED


def test_airflow_unreachable_beyond_the_timeout_fails_the_task(manager, airflow):
    airflow.unreachable = 10**6
    task_id, _ = submit(manager, airflow)
    details = manager.await_(task_id, WAIT)
    assert details.status is TaskStatus.FAILED
    assert "unreachable" in details.additional_information["error"]


def test_a_rebuilt_task_follows_the_same_run(airflow):
    """A worker rebuilds the task from its parameters: same DAG run id, so no second run is started."""
    registry = register_builtin(TaskRegistry(), dag_runs=airflow)
    task = DagRunTask.submit(airflow, SOLVE_MESSAGE_INCONSISTENCIES, {"dry_run": True})
    rebuilt = registry.create(task.type, task.parameters())
    assert isinstance(rebuilt, DagRunTask)
    assert (rebuilt.run_id, rebuilt.conf, rebuilt.procedure) == (task.run_id, {"dry_run": True},
                                                                 SOLVE_MESSAGE_INCONSISTENCIES)


def test_a_migration_submitted_without_airflow_still_runs_in_process_on_an_airflow_node(airflow):
    from mailserver.tasks.builtin.migration import CassandraMigrationTask, SchemaVersions
    from tests.support.schema_version_session import FakeSchemaSession

    versions = SchemaVersions(FakeSchemaSession(12), {}, 14)   # type: ignore[arg-type]
    registry = register_builtin(TaskRegistry(), schema_versions=versions, dag_runs=airflow)
    local = registry.create("cassandra-migration", {"toVersion": 13})
    assert isinstance(local, CassandraMigrationTask) and local.to_version == 13
    delegated = registry.create("cassandra-migration", DagRunTask.submit(
        airflow, CASSANDRA_MIGRATION, {"target_version": 13}).parameters())
    assert isinstance(delegated, DagRunTask) and delegated.procedure is CASSANDRA_MIGRATION
    assert delegated.additional_information()["toVersion"] == 13
