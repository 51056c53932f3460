"""Registers the listener that puts a run's report on the DAG run as its note (mailplatform/run_notes.py)."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from mailplatform import run_notes


class MailPlatformRunNotes(AirflowPlugin):
    name = "mailplatform_run_notes"
    listeners = [run_notes]
