"""A refused param fails the first task, ``check_params``, with one line that names it, nothing else runs, and
the run is red: the leaf ``report`` fails repeating the refusal, or inside a maintenance window is
upstream_failed with the window (it once was skipped, and the run showed green).

The DAG runs under ``dag.test()`` against a real WebAdmin (memory adapters), which answers whether
the user exists.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.dag_files import parsed_dag
from tests.unit.plugins.webadmin_server import connection, serving
from tests.unit.webadmin.webadmin_support import make_context

NOT_RUN = (None, "upstream_failed", "skipped", "removed")


@pytest.fixture
def webadmin(monkeypatch) -> Iterator[int]:
    from mailplatform.live import Lookups

    # No Cassandra here: nobody owns mailboxes (the e2e tests read mailboxPathV3 for real).
    monkeypatch.setattr(Lookups, "owns_mailboxes", lambda self, user: False)
    with serving(make_context()) as port:
        monkeypatch.setenv("AIRFLOW_CONN_WEBADMIN_DEFAULT", connection(port))
        yield port


def refused_run(dag_id: str, conf: dict[str, Any]) -> tuple[str, Any, dict[str, Any]]:
    """The refusal ``check_params`` gives (its live rules included), a ``dag.test()`` run and its task instances."""
    from mailplatform.live import Lookups
    from mailplatform.param_checks import refusal

    dag = parsed_dag(dag_id)
    with Lookups() as lookups:
        line = refusal(dag, conf, lookups)
    run = dag.test(run_conf=conf)
    return line, run, {ti.task_id: ti for ti in run.get_task_instances()}


@pytest.mark.parametrize(("dag_id", "conf", "line"), [
    ("solve_message_inconsistencies", {"user": "nobody@ops.test"},
     "param user: no user nobody@ops.test, nor any mailbox of theirs (ops.test is not even a domain of this server)"),
    ("solve_message_inconsistencies", {"slices": -5}, "param slices: -5 is below the minimum of 1"),
    ("redeliver_event_dead_letters", {"scope": "group"}, "param group: missing: scope='group' needs it"),
    ("recompute_current_quotas", {"slices": 0}, "param slices: 0 is below the minimum of 1"),
    ("swap_search_index", {"shards": 0}, "param shards: 0 is below the minimum of 1"),
])
def test_a_refused_param_fails_the_first_task_and_nothing_else_runs(webadmin, dag_id, conf, line):
    refusal, run, tis = refused_run(dag_id, conf)
    states = {task_id: ti.state for task_id, ti in tis.items()}

    assert refusal == line and "\n" not in refusal
    assert run.state == "failed", states
    assert states.pop("check_params") == "failed"
    assert tis["check_params"].xcom_pull(task_ids="check_params", key="refusal") == line
    if "report" in states:   # the leaf after the job whatever its end: failed (or upstream_failed inside a
        assert states.pop("report") in ("failed", "upstream_failed")   # maintenance window), never skipped
    ran = {task: state for task, state in states.items() if state not in NOT_RUN}
    assert ran == {}, f"ran after a refused param: {ran}"
