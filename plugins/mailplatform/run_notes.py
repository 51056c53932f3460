"""A run's result as a Markdown note on the DAG run, where an operator looks first (the run's page, the grid).

A task states the note by pushing it as the XCom ``run_note`` (``push_run_note``); when the run ends,
the listener below (registered by ``plugins/mailplatform_run_notes.py``) copies the notes of the run's
tasks onto the DAG run. Airflow 3's Task SDK gives tasks no way to write a run's note (the execution
API has none, and tasks have no database), so it is written by the scheduler, which calls dag-run
listeners with the run and its database session. A note a person wrote on the run is never replaced.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from airflow.listeners import hookimpl

NOTE_KEY = "run_note"
log = logging.getLogger(__name__)


def report_note(report: Mapping[str, Any], report_uri: str) -> str:
    """The summary block of the job's log (counts, fixed, failed, where the report is) as Markdown."""
    from spark_apps.common.progress import SUMMARY_RULE, summary_block

    lines = [line for line in summary_block(report, report_uri).splitlines() if line != SUMMARY_RULE]
    title, facts = lines[0].removeprefix("SUMMARY "), lines[1:]
    return "\n".join([f"**{title}**", "", "```", *(fact.strip() for fact in facts), "```"])


def push_run_note(context: Mapping[str, Any], markdown: str) -> None:
    context["ti"].xcom_push(key=NOTE_KEY, value=markdown)


def run_notes(dag_run: Any, session: Any) -> list[str]:
    """The notes the run's tasks pushed, in the order they were pushed."""
    from airflow.models.xcom import XComModel

    query = XComModel.get_many(run_id=dag_run.run_id, dag_ids=dag_run.dag_id, key=NOTE_KEY)
    rows = sorted(session.scalars(query), key=lambda row: row.timestamp)
    return [str(XComModel.deserialize_value(row)) for row in rows]


def write_note(dag_run: Any, session: Any) -> None:
    notes = run_notes(dag_run, session)
    if not notes:
        return
    existing = dag_run.dag_run_note
    if existing is not None and existing.user_id is not None:
        log.info("run %s keeps the note %s wrote; the report is in the run_note XCom", dag_run.run_id,
                 existing.user_id)
        return
    text = "\n\n".join(notes)
    if existing is None:
        dag_run.note = (text, None)
    else:   # the platform's own note of an earlier try of this run
        existing.content = text


def _on_run_end(dag_run: Any) -> None:
    from airflow import settings
    from sqlalchemy.orm import object_session

    session = object_session(dag_run)
    try:
        if session is None:
            # dag.test() hands over a run detached from the session it commits next, which is this
            # thread's scoped session (the scheduler's runs are attached to theirs).
            make_session = settings.Session
            assert make_session is not None   # set up by Airflow before any run can end
            session = make_session()
            dag_run = session.merge(dag_run)
        write_note(dag_run, session)
    except Exception:   # a note is a convenience: it must never disturb the scheduler
        log.exception("run %s of %s: the note was not written", dag_run.run_id, dag_run.dag_id)


@hookimpl
def on_dag_run_success(dag_run: Any, msg: str) -> None:
    _on_run_end(dag_run)


@hookimpl
def on_dag_run_failed(dag_run: Any, msg: str) -> None:
    _on_run_end(dag_run)
