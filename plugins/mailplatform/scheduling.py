"""Which DAGs run on a schedule: none, unless the deployment turns a schedule on.

Read at parse time from the environment only (no I/O at DAG import: an Airflow Variable would be a
database or API call on every parse). For a DAG ``<dag_id>``, ``MAILPLATFORM_SCHEDULE__<DAG_ID>``
(upper case) is:

* unset, empty or ``off``: no schedule, manual runs only (what is shipped);
* ``on``: the schedule the DAG ships with (the daily scan at 02:00 UTC, the vault purge on the 1st
  of the month at 03:00 UTC);
* anything else: a cron expression or preset that replaces it (``*/5 * * * *``); an invalid one
  is an import error of that DAG, shown in the UI.

An enabled schedule is a ``PunctualCronTimetable``: unpausing the DAG or enabling its schedule
never starts a run for a time already passed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from mailplatform.timetables import PunctualCronTimetable

ENV_PREFIX = "MAILPLATFORM_SCHEDULE__"
OFF = frozenset({"", "off", "false", "no", "0"})
ON = frozenset({"on", "true", "yes", "1"})
TIMEZONE = "UTC"


@dataclass(frozen=True)
class Schedule:
    timetable: PunctualCronTimetable | None
    variable: str
    shipped: str

    @property
    def enabled(self) -> bool:
        return self.timetable is not None

    def sentence(self) -> str:
        """For the DAG's description: when it runs by itself, or how to make it."""
        if self.timetable is None:
            shipped = PunctualCronTimetable(self.shipped, timezone=TIMEZONE).description.split(" (")[0]
            return f"not scheduled ({self.variable}=on: {shipped.lower()} {TIMEZONE})"
        return f"scheduled: {self.timetable.description.split(' (')[0].lower()} {TIMEZONE}"


def variable_of(dag_id: str) -> str:
    return ENV_PREFIX + dag_id.upper()


def configured_schedule(dag_id: str, shipped: str, environ: Mapping[str, str] | None = None) -> Schedule:
    env = os.environ if environ is None else environ
    variable = variable_of(dag_id)
    value = env.get(variable, "").strip()
    if value.lower() in OFF:
        return Schedule(None, variable, shipped)
    cron = shipped if value.lower() in ON else value
    timetable = PunctualCronTimetable(cron, timezone=TIMEZONE)
    try:
        timetable.validate()
    except Exception as exc:
        raise ValueError(f"{variable}={value!r}: not a cron expression ({exc})") from None
    return Schedule(timetable, variable, shipped)
