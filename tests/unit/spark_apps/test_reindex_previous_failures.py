"""The scope of James's ``reIndexFailedMessagesOf`` in the reindex job: a previous report's failure lists
(REST shapes) become exactly the rows the rerun compares, and the DAG turns a run id into that run's key."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from spark_apps.jobs.reindex_mailboxes import PreviousFailures

A = "c0ffee00-1111-11ef-8000-000000000001"
B = "c0ffee00-1111-11ef-8000-000000000002"
C = "c0ffee00-1111-11ef-8000-000000000003"
REPORT = {"type": "full-reindexing", "messageFailures": {A.upper(): [{"uid": 1}, {"uid": 36}], B: [{"uid": 7}]},
          "mailboxFailures": [C]}


def test_failure_lists_of_a_report():
    failures = PreviousFailures.from_report(REPORT)
    assert failures.messages == {(A, 1), (A, 36), (B, 7)} and failures.whole_mailboxes == {C}
    assert failures.mailboxes() == [A, B, C]
    assert failures.covers(A, 36) and failures.covers(C, 999) and not failures.covers(A, 2)


@pytest.mark.parametrize("report", [{"type": "recompute-mailbox-counters"}, {"messageFailures": []},
                                    {"messageFailures": {}, "mailboxFailures": "x"}])
def test_a_report_without_failure_lists_is_refused(report):
    with pytest.raises(ValueError, match="not the report of a reindex run"):
        PreviousFailures.from_report(report)


def test_select_keeps_the_listed_messages_and_whole_mailboxes(spark):
    rows = [(A, 1, "s"), (A, 2, "s"), (A, 36, "s"), (B, 7, "s"), (B, 8, "s"), (C, 1, "s"), (C, 2, "s")]
    frame = spark.createDataFrame(rows, "mailboxid string, uid long, sig string")
    selected = PreviousFailures.from_report(REPORT).select(spark, frame)
    assert sorted((r["mailboxid"], r["uid"]) for r in selected.collect()) == [(A, 1), (A, 36), (B, 7), (C, 1), (C, 2)]


def test_the_dag_reads_the_failures_of_the_named_run():
    path = Path(os.environ["AIRFLOW__CORE__DAGS_FOLDER"]) / "reindex_mailboxes.py"
    spec = importlib.util.spec_from_file_location("reindex_mailboxes_dag", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    args = module.job_args({"mode": "rebuildAll", "failures_of": "webadmin__1234", "messages_per_second": 20})
    assert args == ["--mode", "rebuildAll", "--failures-of", "reindex_mailboxes/webadmin__1234",
                    "--messages-per-second", "20"]
    assert "failures_of" in module.dag.params
