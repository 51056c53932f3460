"""Timetables that never start a run an operator did not see coming.

* ``PunctualCronTimetable``: a cron trigger whose runs start at their cron point or not at all.
  Airflow's ``CronTriggerTimetable`` with ``catchup=False`` starts the most recent point already
  passed as soon as the DAG is unpaused (or its schedule enabled): a monthly purge unpaused on the
  15th would purge at once, and the trigger form of the UI unpauses the DAG it opens. Here a point
  that passed is dropped: the next run is the next point to come (a point missed while the
  scheduler was down is not made up either; trigger it by hand).
* ``BackfillOnlyTimetable``: monthly data intervals for ``airflow backfill create``, and never a
  scheduled run (unpausing a ``CronDataIntervalTimetable`` starts the last complete month).

Airflow finds a DAG's timetable class again by its path, through the plugin in
``plugins/mailplatform_timetables.py``.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk.timezone import coerce_datetime, utcnow
from airflow.timetables.base import DagRunInfo, DataInterval, TimeRestriction
from airflow.timetables.interval import CronDataIntervalTimetable
from airflow.timetables.trigger import CronTriggerTimetable


class PunctualCronTimetable(CronTriggerTimetable):
    """Runs at each cron point from now on; never one for a point already passed (without catch-up)."""

    def __init__(self, cron: str, *, timezone: Any, **kwargs: Any) -> None:
        super().__init__(cron, timezone=timezone, **kwargs)
        self.description = f"{self.description} ({timezone}), never for a time already passed"

    def next_dagrun_info(self, *, last_automated_data_interval: DataInterval | None,
                         restriction: TimeRestriction) -> DagRunInfo | None:
        if restriction.catchup:
            return super().next_dagrun_info(last_automated_data_interval=last_automated_data_interval,
                                            restriction=restriction)
        candidates = [self._align_to_next(coerce_datetime(utcnow()))]
        if last_automated_data_interval is not None:
            candidates.append(self._get_next(last_automated_data_interval.end))
        if restriction.earliest is not None:
            candidates.append(self._align_to_next(restriction.earliest))
        start = max(candidates)
        if restriction.latest is not None and restriction.latest < start:
            return None
        return DagRunInfo.interval(coerce_datetime(start - self._interval), start)


class BackfillOnlyTimetable(CronDataIntervalTimetable):
    """The cron's data intervals for backfills; the scheduler itself never starts a run."""

    def __init__(self, cron: str, timezone: Any) -> None:
        super().__init__(cron, timezone)
        self.description = f"Never scheduled: backfills only, one run per interval of '{self._expression}'"

    @property
    def summary(self) -> str:
        return "backfills only"

    def next_dagrun_info(self, *, last_automated_data_interval: DataInterval | None,
                         restriction: TimeRestriction) -> DagRunInfo | None:
        if not restriction.catchup:   # the scheduler's question for a DAG without catch-up
            return None
        return super().next_dagrun_info(last_automated_data_interval=last_automated_data_interval,
                                        restriction=restriction)

