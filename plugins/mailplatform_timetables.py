"""Registers the platform's timetables: Airflow finds a serialized DAG's timetable class only among plugins."""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin
from mailplatform.timetables import BackfillOnlyTimetable, PunctualCronTimetable


class MailPlatformTimetables(AirflowPlugin):
    name = "mailplatform_timetables"
    timetables = [PunctualCronTimetable, BackfillOnlyTimetable]
