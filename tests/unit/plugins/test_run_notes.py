"""A task's ``run_note`` XCom becomes the DAG run's note when the run ends (the platform's listener plugin)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.task_logs import run_note

NOTE = "**procedure: COMPLETED**\n\n```\nfixed: 3\n```"
DAG_ID = "run_note_probe"
DAG_FILE = f'''
from airflow.sdk import DAG, Param, task
from mailplatform.run_notes import push_run_note

with DAG(dag_id="{DAG_ID}", schedule=None, catchup=False, params={{"fail": Param(False, type="boolean")}}) as dag:
    @task(retries=0)
    def report(**context):
        push_run_note(context, {NOTE!r})
        if context["params"]["fail"]:
            raise RuntimeError("the repair left 1 unresolved")

    report()
'''


@pytest.fixture(scope="module")
def note_dag(airflow_db, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A DAG whose task pushes a note (then fails when asked), parsed from its file in the DAG folder
    (``dag.test()`` runs only the DAGs of a bundle)."""
    from airflow import settings
    from airflow.dag_processing.dagbag import DagBag

    folder = tmp_path_factory.mktemp("note-dags")
    (folder / f"{DAG_ID}.py").write_text(DAG_FILE)
    with pytest.MonkeyPatch.context() as env:
        # The DAG-folder bundle reads its path from Airflow's settings, read once at import.
        env.setenv("AIRFLOW__CORE__DAGS_FOLDER", str(folder))
        env.setattr(settings, "DAGS_FOLDER", str(folder))
        bag = DagBag(dag_folder=str(folder))
        assert not bag.import_errors
        yield bag.get_dag(DAG_ID)


@pytest.mark.parametrize("fail", [False, True], ids=["succeeded", "failed"])
def test_the_note_a_task_pushed_is_on_the_run_when_it_ends(note_dag: Any, fail: bool) -> None:
    run = note_dag.test(run_conf={"fail": fail})

    assert run.state == ("failed" if fail else "success")
    assert run_note(DAG_ID, run.run_id) == NOTE


def test_a_note_a_person_wrote_on_the_run_is_kept(note_dag: Any) -> None:
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from mailplatform.run_notes import write_note
    from sqlalchemy import select

    run = note_dag.test(run_conf={"fail": False})
    with create_session() as session:
        stored = session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == run.run_id))
        stored.dag_run_note.content, stored.dag_run_note.user_id = "re-run after the fix, see ticket", "ops"

    with create_session() as session:   # the run ends again (cleared and re-run): the listener writes
        write_note(session.scalar(select(DagRun).where(DagRun.dag_id == DAG_ID, DagRun.run_id == run.run_id)),
                   session)

    assert run_note(DAG_ID, run.run_id) == "re-run after the fix, see ticket"
