"""``DagRuns`` in memory, for unit tests: DAGs declared with their params, runs that advance as
they are read, and a scripted outcome (final state and report) per DAG.

Each ``get`` of an unfinished run moves it one step (``queued`` -> ``running`` -> ... -> the
outcome after ``steps`` reads), so a polling caller sees what it would see from Airflow without
any clock. ``hold`` keeps runs running (to cancel them); ``unreachable`` makes the next calls
raise ``AirflowError`` as a stopped api-server would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mailserver.airflow.api import (
    AirflowError,
    DagInfo,
    DagNotFound,
    DagRun,
    DagRunNotFound,
    DagRunRefused,
    DagRuns,
    DagRunState,
)

Outcome = Callable[[Mapping[str, Any]], tuple[DagRunState, dict[str, Any] | None]]


def succeed_with(report: dict[str, Any]) -> Outcome:
    return lambda conf: (DagRunState.SUCCESS, {**report, "runningOptions": dict(conf)})


@dataclass
class MemoryDag:
    params: frozenset[str]
    outcome: Outcome
    paused: bool = False
    steps: int = 2          # reads of a running run before it ends
    hold: bool = False      # never ends by itself


@dataclass
class _Run:
    run: DagRun
    reads: int = 0
    report: dict[str, Any] | None = None


@dataclass
class MemoryDagRuns(DagRuns):
    base_url: str = "http://airflow.invalid"
    dags: dict[str, MemoryDag] = field(default_factory=dict)
    unreachable: int = 0                    # how many of the next calls fail
    triggered: list[DagRun] = field(default_factory=list)
    _runs: dict[tuple[str, str], _Run] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_dag(self, dag_id: str, params: set[str] | frozenset[str], outcome: Outcome, **options: Any) -> MemoryDag:
        dag = MemoryDag(frozenset(params), outcome, **options)
        self.dags[dag_id] = dag
        return dag

    def _reach(self) -> None:
        if self.unreachable > 0:
            self.unreachable -= 1
            raise AirflowError(f"Airflow at {self.base_url} is unreachable: connection refused")

    def _dag(self, dag_id: str) -> MemoryDag:
        if dag_id not in self.dags:
            raise DagNotFound(f"Airflow has no DAG {dag_id}")
        return self.dags[dag_id]

    def _entry(self, dag_id: str, run_id: str) -> _Run:
        entry = self._runs.get((dag_id, run_id))
        if entry is None:
            raise DagRunNotFound(f"Airflow has no run {run_id} of DAG {dag_id}")
        return entry

    def dag(self, dag_id: str) -> DagInfo:
        with self._lock:
            self._reach()
            dag = self._dag(dag_id)
            return DagInfo(dag_id, dag.params, dag.paused)

    def trigger(self, dag_id: str, run_id: str, conf: Mapping[str, Any]) -> DagRun:
        with self._lock:
            self._reach()
            self._dag(dag_id)
            if (dag_id, run_id) in self._runs:
                return self._runs[(dag_id, run_id)].run
            if not run_id:
                raise DagRunRefused("empty run id")
            run = DagRun(dag_id, run_id, DagRunState.QUEUED, dict(conf))
            self._runs[(dag_id, run_id)] = _Run(run)
            self.triggered.append(run)
            return run

    def get(self, dag_id: str, run_id: str) -> DagRun:
        with self._lock:
            self._reach()
            entry = self._entry(dag_id, run_id)
            self._advance(self._dag(dag_id), entry)
            return entry.run

    def report(self, dag_id: str, run_id: str) -> dict[str, Any] | None:
        with self._lock:
            self._reach()
            entry = self._runs.get((dag_id, run_id))
            return entry.report if entry else None

    def cancel(self, dag_id: str, run_id: str) -> DagRun:
        with self._lock:
            self._reach()
            entry = self._entry(dag_id, run_id)
            if not entry.run.state.finished:
                entry.run = replace(entry.run, state=DagRunState.FAILED)
            return entry.run

    @staticmethod
    def _advance(dag: MemoryDag, entry: _Run) -> None:
        if entry.run.state.finished:
            return
        entry.reads += 1
        if dag.hold or entry.reads <= dag.steps:
            entry.run = replace(entry.run, state=DagRunState.RUNNING)
            return
        state, report = dag.outcome(entry.run.conf)
        entry.run, entry.report = replace(entry.run, state=state), report
