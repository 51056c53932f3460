"""The schedules of the scan and the purge as the REST API shows them, for tests of the scheduler."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from mailplatform.scheduling import variable_of

SCAN = "detect_cassandra_inconsistencies"
PURGE = "purge_deleted_messages_vault"
SHIPPED_CRONS = {SCAN: "0 2 * * *", PURGE: "0 3 1 * *"}
AS_SHIPPED: dict[str, str] = {}
ENABLED = {variable_of(SCAN): "on", variable_of(PURGE): "on"}   # what docs/operations.md tells an operator
EVERY_MINUTE = {variable_of(SCAN): "* * * * *", variable_of(PURGE): "* * * * *"}


def parsed_with(settings: Mapping[str, str]) -> Callable[[dict[str, Any]], bool]:
    """Whether a DAG, as the API shows it, was parsed with ``settings``."""
    def parsed(dag: dict[str, Any]) -> bool:
        dag_id = dag["dag_id"]
        if dag_id not in SHIPPED_CRONS:
            return True
        value = settings.get(variable_of(dag_id))
        if value is None:   # whatever it ships with, but none of the schedules these tests enable
            return dag["timetable_summary"] not in {SHIPPED_CRONS[dag_id], *EVERY_MINUTE.values()}
        return dag["timetable_summary"] == (SHIPPED_CRONS[dag_id] if value == "on" else value)
    return parsed


def now() -> datetime:
    return datetime.now(UTC)


def run_keys(runs: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(run["dag_id"], run["run_type"], run["dag_run_id"]) for run in runs}
