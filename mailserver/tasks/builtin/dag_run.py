"""A James task whose work is an Airflow DAG run: the maintenance procedures (one implementation each,
the Spark jobs), seen from WebAdmin's task view.

The task triggers the run (its id is chosen when the task is submitted, so it is shown at once
and a repeated trigger finds the same run), then reads the run's state every ``poll_interval``
until it ends:

* ``success``: the task completes; ``additionalInformation`` is the DAG's report (James's
  counters) plus ``dagId``, ``dagRunId``, ``airflowUrl`` and ``dagRunState``;
* ``failed``: the task fails, with the report when the run produced one;
* the task is canceled: the run is marked failed in Airflow (which stops its tasks), the task
  ends ``canceled``;
* the DAG is unknown, paused, or refuses the conf: the task fails at once and ``error`` says why;
* Airflow does not answer: the task keeps polling for ``unreachable_timeout`` seconds (the run
  goes on without it), then fails.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tenacity import RetryCallState, retry, retry_if_exception_type, retry_if_not_exception_type, wait_fixed

from mailserver.airflow.api import (
    AirflowError,
    DagNotFound,
    DagRunNotFound,
    DagRunRefused,
    DagRuns,
    DagRunState,
    trigger_checked,
)
from mailserver.airflow.procedures import PROCEDURES, DagProcedure
from mailserver.tasks.api import Result, Task
from mailserver.tasks.registry import TaskFactory, TaskRegistry

log = logging.getLogger(__name__)

RUN_ID_PREFIX = "webadmin__"
# Report keys that are not James counters, or that James's envelope sets itself.
NOT_INFORMATION = ("type", "timestamp")


def new_run_id() -> str:
    return f"{RUN_ID_PREFIX}{uuid.uuid4()}"


@dataclass(frozen=True)
class Polling:
    interval: float = 5.0
    unreachable_timeout: float = 300.0


class DagRunTask(Task):
    def __init__(self, runs: DagRuns, procedure: DagProcedure, conf: Mapping[str, Any], run_id: str,
                 polling: Polling = Polling(), clock: Callable[[], float] = time.monotonic) -> None:
        self.type = procedure.task_type
        self.runs = runs
        self.procedure = procedure
        self.conf = dict(conf)
        self.run_id = run_id
        self.polling = polling
        self._clock = clock
        self._state: DagRunState | None = None
        self._report: dict[str, Any] | None = None
        self._error: str | None = None
        self._lock = threading.Lock()

    @classmethod
    def submit(cls, runs: DagRuns, procedure: DagProcedure, conf: Mapping[str, Any]) -> DagRunTask:
        """A new task for a new run (its id chosen now)."""
        return cls(runs, procedure, conf, new_run_id())

    # ------------------------------------------------------------------ James's task
    def parameters(self) -> dict[str, Any]:
        return {"dagId": self.procedure.dag_id, "dagRunId": self.run_id, "conf": self.conf}

    def additional_information(self) -> dict[str, Any]:
        with self._lock:
            report, state, error = self._report, self._state, self._error
        info = {**self.procedure.information(self.conf),
                **{k: v for k, v in (report or {}).items() if k not in NOT_INFORMATION},
                "dagId": self.procedure.dag_id, "dagRunId": self.run_id,
                "airflowUrl": self.runs.ui_url(self.procedure.dag_id, self.run_id),
                "dagRunState": state.value if state else None}
        if error is not None:
            info["error"] = error
        return info

    def run(self) -> Result:
        dag_id = self.procedure.dag_id
        try:
            run = self._retrying(lambda: trigger_checked(self.runs, dag_id, self.run_id, self.conf))
        except (DagNotFound, DagRunRefused, AirflowError) as exc:
            if self.cancel_requested:
                return Result.COMPLETED   # canceled while Airflow did not answer: nothing was started
            return self._fail(f"DAG run not started: {exc}")
        self._set(state=run.state)
        log.info("task %s: DAG run %s of %s triggered (%s)", self.type, self.run_id, dag_id,
                 self.runs.ui_url(dag_id, self.run_id))
        while not run.state.finished:
            if self._cancel_flag.wait(self.polling.interval):
                return self._cancel()
            try:
                run = self._retrying(lambda: self.runs.get(dag_id, self.run_id))
            except (DagRunNotFound, AirflowError) as exc:
                return self._fail(f"lost track of the DAG run: {exc}")
            self._set(state=run.state)
        try:
            self._set(report=self._retrying(lambda: self.runs.report(dag_id, self.run_id)))
        except AirflowError as exc:
            self._set(error=f"the report could not be read: {exc}")
        if run.state is DagRunState.SUCCESS:
            return Result.COMPLETED
        with self._lock:
            if self._error is None:
                self._error = "the DAG run failed: its task logs in Airflow say why"
        return Result.FAILED

    # ------------------------------------------------------------------ helpers
    def _retrying(self, call: Callable[[], Any]) -> Any:
        """``call``, again every poll interval while Airflow does not answer, up to the timeout.

        Answers that are final (no such DAG or run, a refused conf) are not retried.
        """
        deadline = self._clock() + self.polling.unreachable_timeout

        def given_up(_: RetryCallState) -> bool:
            return self._clock() >= deadline or self.cancel_requested

        def pause(seconds: float) -> None:   # a cancel ends the wait
            self._cancel_flag.wait(seconds)

        def warn(state: RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            log.warning("task %s: Airflow did not answer (%s); retrying", self.type, error)

        return retry(retry=retry_if_exception_type(AirflowError)
                     & retry_if_not_exception_type((DagNotFound, DagRunNotFound, DagRunRefused)),
                     stop=given_up, wait=wait_fixed(self.polling.interval), sleep=pause,
                     before_sleep=warn, reraise=True)(call)()

    def _cancel(self) -> Result:
        try:
            run = self.runs.cancel(self.procedure.dag_id, self.run_id)
            self._set(state=run.state)
        except AirflowError as exc:
            self._set(error=f"canceled, but the DAG run could not be marked failed in Airflow: {exc}")
        return Result.COMPLETED   # the worker records a canceled task as canceled

    def _fail(self, error: str) -> Result:
        log.error("task %s (DAG %s, run %s): %s", self.type, self.procedure.dag_id, self.run_id, error)
        self._set(error=error)
        return Result.FAILED

    def _set(self, **values: Any) -> None:
        with self._lock:
            for name, value in values.items():
                setattr(self, f"_{name}", value)


def factory(runs: DagRuns, procedure: DagProcedure, polling: Polling) -> TaskFactory:
    return lambda p: DagRunTask(runs, procedure, p["conf"], p["dagRunId"], polling)


def register(registry: TaskRegistry, runs: DagRuns, polling: Polling = Polling(), *,
             in_process: Mapping[str, TaskFactory] | None = None) -> None:
    """Every procedure's task type. ``in_process``: the factory of a type that can also run without
    Airflow (the schema migration), used for the tasks submitted that way (no ``dagId``)."""
    for task_type, procedure in PROCEDURES.items():
        delegated = factory(runs, procedure, polling)
        local = (in_process or {}).get(task_type)
        if local is None:
            registry.register(task_type, delegated)
        else:
            registry.register(task_type, _by_origin(delegated, local))


def _by_origin(delegated: TaskFactory, local: TaskFactory) -> TaskFactory:
    """Airflow's factory for a task submitted as a DAG run (its parameters name the DAG), else the local one."""
    return lambda p: delegated(p) if "dagId" in p else local(p)
