"""The port to Airflow: trigger a DAG run, read its state and its report, cancel it.

A DAG run is named by the caller (``run_id``), so triggering is idempotent: asking again for a
run that exists returns it instead of starting a second one. The report is the return value
(XCom) of the DAG's ``report`` task: James's ``additionalInformation`` counters of the procedure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

REPORT_TASK = "report"


class DagRunState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCESS = "success"
    FAILED = "failed"

    @property
    def finished(self) -> bool:
        return self in (DagRunState.SUCCESS, DagRunState.FAILED)


@dataclass(frozen=True)
class DagRun:
    dag_id: str
    run_id: str
    state: DagRunState
    conf: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DagInfo:
    dag_id: str
    params: frozenset[str]   # the names the DAG declares: anything else in a run's conf is refused
    is_paused: bool


class AirflowError(RuntimeError):
    """Airflow did not answer as expected (unreachable, 5xx, refused credentials)."""


class DagNotFound(AirflowError):
    pass


class DagRunNotFound(AirflowError):
    pass


class DagRunRefused(AirflowError):
    """Airflow refused to create the run (a param value its schema rejects, a paused or unknown DAG ...)."""


class DagRuns(ABC):
    """Where maintenance DAG runs happen. ``base_url`` is what operators open to follow a run."""

    base_url: str

    @abstractmethod
    def dag(self, dag_id: str) -> DagInfo:
        """The DAG's declared params and paused flag; DagNotFound."""

    @abstractmethod
    def trigger(self, dag_id: str, run_id: str, conf: Mapping[str, Any]) -> DagRun:
        """Start run ``run_id`` with ``conf`` (or return it when it exists); DagNotFound, DagRunRefused."""

    @abstractmethod
    def get(self, dag_id: str, run_id: str) -> DagRun:
        """The run now; DagRunNotFound."""

    @abstractmethod
    def report(self, dag_id: str, run_id: str) -> dict[str, Any] | None:
        """The ``report`` task's return value; None while (or when) there is none."""

    @abstractmethod
    def cancel(self, dag_id: str, run_id: str) -> DagRun:
        """Mark an unfinished run failed (Airflow stops its running tasks); a finished one is left as is."""

    def ui_url(self, dag_id: str, run_id: str) -> str:
        return f"{self.base_url.rstrip('/')}/dags/{dag_id}/runs/{run_id}"


def check_conf(info: DagInfo, conf: Mapping[str, Any]) -> None:
    """A conf key the DAG does not declare would be ignored by Airflow: refuse it instead."""
    unknown = sorted(set(conf) - info.params)
    if unknown:
        raise DagRunRefused(f"DAG {info.dag_id} declares no param {', '.join(unknown)} "
                            f"(it declares {', '.join(sorted(info.params)) or 'none'})")


def trigger_checked(runs: DagRuns, dag_id: str, run_id: str, conf: Mapping[str, Any]) -> DagRun:
    """Trigger after checking that every conf key is a declared param and the DAG is not paused.

    A paused DAG would queue the run forever; saying so at once is what an admin needs.
    """
    info = runs.dag(dag_id)
    check_conf(info, conf)
    if info.is_paused:
        raise DagRunRefused(f"DAG {dag_id} is paused in Airflow: unpause it (Airflow UI, or PATCH "
                            f"/api/v2/dags/{dag_id} with is_paused=false), then submit again")
    return runs.trigger(dag_id, run_id, conf)
