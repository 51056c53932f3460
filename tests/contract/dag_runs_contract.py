"""Behaviour every ``DagRuns`` adapter must give the DAG-run task (memory and Airflow's REST API).

Runners provide ``dag_runs`` (the adapter), ``dag_id`` (a DAG that ends in ``success`` with a
report for ``conf``), ``conf`` (a valid conf of that DAG), ``declared`` (params the DAG declares)
and ``finish_timeout`` (an upper bound for one run). Run ids are unique per test, so adapters
may be shared with other runs of the same DAG.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from mailserver.airflow import api


def new_run_id(tag: str) -> str:
    return f"contract__{tag}_{uuid.uuid4().hex[:12]}"


def wait_finished(runs: api.DagRuns, dag_id: str, run_id: str, timeout: float, pause: float = 0.0) -> api.DagRun:
    deadline = time.monotonic() + timeout
    while True:
        run = runs.get(dag_id, run_id)
        if run.state.finished:
            return run
        assert time.monotonic() < deadline, f"run {run_id} still {run.state} after {timeout} s"
        time.sleep(pause)


class DagRunsContract:
    pause = 0.0   # between two reads of a run's state (the real adapter waits a few seconds)

    def test_a_triggered_run_ends_in_success_and_its_report_is_readable(
            self, dag_runs: api.DagRuns, dag_id: str, conf: dict[str, Any], finish_timeout: float) -> None:
        run_id = new_run_id("success")
        run = api.trigger_checked(dag_runs, dag_id, run_id, conf)
        assert (run.dag_id, run.run_id) == (dag_id, run_id)
        assert run.state in (api.DagRunState.QUEUED, api.DagRunState.RUNNING)
        assert dict(run.conf) == conf

        finished = wait_finished(dag_runs, dag_id, run_id, finish_timeout, self.pause)
        assert finished.state is api.DagRunState.SUCCESS
        report = dag_runs.report(dag_id, run_id)
        assert isinstance(report, dict) and report, report

    def test_triggering_an_existing_run_id_returns_that_run(self, dag_runs: api.DagRuns, dag_id: str,
                                                            conf: dict[str, Any]) -> None:
        run_id = new_run_id("twice")
        first = dag_runs.trigger(dag_id, run_id, conf)
        again = dag_runs.trigger(dag_id, run_id, {**conf})
        assert (again.dag_id, again.run_id) == (first.dag_id, first.run_id)
        assert dict(again.conf) == conf
        dag_runs.cancel(dag_id, run_id)

    def test_cancel_marks_an_unfinished_run_failed_and_leaves_a_finished_one(
            self, dag_runs: api.DagRuns, dag_id: str, conf: dict[str, Any]) -> None:
        run_id = new_run_id("cancel")
        dag_runs.trigger(dag_id, run_id, conf)
        assert dag_runs.cancel(dag_id, run_id).state is api.DagRunState.FAILED
        assert dag_runs.get(dag_id, run_id).state is api.DagRunState.FAILED
        assert dag_runs.cancel(dag_id, run_id).state is api.DagRunState.FAILED

    def test_a_run_without_report_yet_has_none(self, dag_runs: api.DagRuns, dag_id: str, conf: dict[str, Any]) -> None:
        run_id = new_run_id("noreport")
        dag_runs.trigger(dag_id, run_id, conf)
        dag_runs.cancel(dag_id, run_id)
        assert dag_runs.report(dag_id, run_id) is None

    def test_the_dag_declares_its_params(self, dag_runs: api.DagRuns, dag_id: str, declared: set[str]) -> None:
        info = dag_runs.dag(dag_id)
        assert info.dag_id == dag_id
        assert declared <= info.params
        assert "not_a_param" not in info.params

    def test_an_undeclared_param_is_refused_before_anything_runs(self, dag_runs: api.DagRuns, dag_id: str,
                                                                  conf: dict[str, Any]) -> None:
        run_id = new_run_id("undeclared")
        with pytest.raises(api.DagRunRefused, match="declares no param not_a_param"):
            api.trigger_checked(dag_runs, dag_id, run_id, {**conf, "not_a_param": 1})
        with pytest.raises(api.DagRunNotFound):
            dag_runs.get(dag_id, run_id)

    def test_unknown_dag_and_unknown_run(self, dag_runs: api.DagRuns, dag_id: str) -> None:
        with pytest.raises(api.DagNotFound):
            dag_runs.dag("no_such_dag_" + uuid.uuid4().hex[:6])
        with pytest.raises(api.DagNotFound):
            dag_runs.trigger("no_such_dag_" + uuid.uuid4().hex[:6], new_run_id("nodag"), {})
        with pytest.raises(api.DagRunNotFound):
            dag_runs.get(dag_id, new_run_id("norun"))
        with pytest.raises(api.DagRunNotFound):
            dag_runs.cancel(dag_id, new_run_id("norun"))
        assert dag_runs.report(dag_id, new_run_id("norun")) is None

    def test_ui_url_names_the_run(self, dag_runs: api.DagRuns, dag_id: str) -> None:
        assert dag_runs.ui_url(dag_id, "r1") == f"{dag_runs.base_url.rstrip('/')}/dags/{dag_id}/runs/r1"
