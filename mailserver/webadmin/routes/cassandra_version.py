"""``/cassandra/version`` (webadmin reference §10.1): read the schema version, upgrade it as a task.

As James's code (not its docs): upgrades answer 201 with the task, and upgrading to the latest
version answers 409 when no chain of migrations leads there. Upgrading to a version at or below
the current one creates a task that completes without changing anything.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.airflow.api import DagRuns
from mailserver.airflow.procedures import CASSANDRA_MIGRATION
from mailserver.model.java_numbers import JAVA_INT_MAX, JAVA_INT_MIN, NotAnInteger, OutOfRange, parse_integer
from mailserver.tasks.api import Task
from mailserver.tasks.builtin.dag_run import DagRunTask
from mailserver.tasks.builtin.migration import CassandraMigrationTask, SchemaVersions
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import bad_request, conflict
from mailserver.webadmin.routes.tasks import submitted

NOT_AN_INTEGER = "Expecting version to be specified as an integer"


def router(versions: SchemaVersions, tasks: TaskManager | None, dag_runs: DagRuns | None = None) -> APIRouter:
    """With ``dag_runs`` (Airflow configured) upgrades are runs of the ``cassandra_schema_migration``
    DAG (same task type and ``toVersion``); without, they run in-process on a task worker."""
    api = APIRouter(tags=["cassandra"])

    def migration(target: int) -> Task:
        if dag_runs is None:
            return CassandraMigrationTask(versions, target)
        return DagRunTask.submit(dag_runs, CASSANDRA_MIGRATION, CASSANDRA_MIGRATION.conf({}, body=str(target)))

    @api.get("/cassandra/version", summary="Current schema version (null when unknown)")
    def current() -> dict[str, int | None]:
        return {"version": versions.current()}

    @api.get("/cassandra/version/latest", summary="Latest schema version this server supports")
    def latest() -> dict[str, int]:
        return {"version": versions.latest}

    if tasks is None:
        return api

    @api.post("/cassandra/version/upgrade", status_code=201, summary="Task upgrading to the version in the body")
    async def upgrade(request: Request) -> Response:
        raw = (await request.body()).decode(errors="replace")
        try:   # an int in James (SchemaVersion)
            target = parse_integer(raw.strip(), JAVA_INT_MIN, JAVA_INT_MAX)
        except NotAnInteger:
            raise bad_request(NOT_AN_INTEGER) from None
        except OutOfRange:
            raise bad_request(f"{NOT_AN_INTEGER}: 'version' must be at most {JAVA_INT_MAX}") from None
        if target <= 0:
            raise bad_request("Version should be strictly positive")
        return submitted(await run_in_threadpool(tasks.submit, migration(target)))

    @api.post("/cassandra/version/upgrade/latest", status_code=201, summary="Task upgrading to the latest version")
    def upgrade_latest() -> Response:
        missing = versions.missing_steps(versions.latest)
        if missing:
            raise conflict("The migration requested can not be performed",
                           f"No migration to version(s) {missing}")
        return submitted(tasks.submit(migration(versions.latest)))

    return api
