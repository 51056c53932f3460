"""Quota on the mutualised tables ``quotaCurrentValue`` (counters) and ``quotaLimit``.

Limits are written as James's ``CassandraPerUserMaxQuotaManagerV2`` writes them: one row per
(scope, identifier, component, type), ``-1`` for unlimited, no row for "not set". A value below
-1 (never written by us) reads as 0, as James's ``QuotaCodec`` reads it.

Counting an event once (``increase(..., once=...)``) adds a counter row of ours, in
``event_applied``, to the same counter batch as the two usage counters: one request, so a
listener process killed at any point has either written all three or none. The rows live in
weekly partitions (spread over shards so that none grows large); an event is recognised during
the week it was applied and the next one, then its partition is dropped. Counters cannot
expire, and a counter partition may be deleted only once nothing increments it again, which
holds for a past week.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.store import AppliedEvent, QuotaStore
from mailserver.model.quota import UNLIMITED, LimitKey, QuotaComponent, QuotaLimits, QuotaRoot, QuotaType, QuotaUsage

log = logging.getLogger(__name__)

COMPONENT = QuotaComponent.MAILBOX.value
INCREMENT = ("UPDATE quotaCurrentValue SET currentValue = currentValue + ? "
             "WHERE identifier = ? AND quotaComponent = ? AND quotaType = ?")
MARK_APPLIED = ('UPDATE event_applied SET applied = applied + 1 '
                'WHERE "group" = ? AND week = ? AND shard = ? AND eventId = ?')
WAS_APPLIED = 'SELECT eventId FROM event_applied WHERE "group" = ? AND week IN ? AND shard = ? AND eventId = ?'
FORGET_WEEK = 'DELETE FROM event_applied WHERE "group" = ? AND week = ? AND shard = ?'
APPLIED_SHARDS = 64
REMEMBERED_WEEKS = 2    # this week and the previous one: 7 to 14 days
EPOCH = dt.date(1970, 1, 5)   # a Monday: weeks run Monday to Sunday


def utc_today() -> dt.date:
    return dt.datetime.now(dt.UTC).date()


class CassandraQuotaStore(QuotaStore):
    def __init__(self, session: CassandraSession, today: Callable[[], dt.date] = utc_today) -> None:
        self.s = session
        self.today = today
        self._forgotten: set[tuple[str, int]] = set()   # (group, week) whose old partitions are gone
        self._lock = threading.Lock()

    def forgotten_weeks(self) -> frozenset[tuple[str, int]]:
        """The (group, first remembered week) whose older applied-event partitions this process deleted."""
        with self._lock:
            return frozenset(self._forgotten)

    def current(self, root: QuotaRoot) -> QuotaUsage:
        rows = self.s.execute("SELECT quotaType, currentValue FROM quotaCurrentValue "
                              "WHERE identifier = ? AND quotaComponent = ?", (root.as_string(), COMPONENT))
        values = {r["quotatype"]: r["currentvalue"] or 0 for r in rows}
        return QuotaUsage(values.get(QuotaType.COUNT.value, 0), values.get(QuotaType.SIZE.value, 0))

    def increase(self, root: QuotaRoot, delta: QuotaUsage, once: AppliedEvent | None = None) -> bool:
        updates: list[tuple[str, tuple[object, ...]]] = [
            (INCREMENT, (value, root.as_string(), COMPONENT, quota_type.value))
            for quota_type, value in ((QuotaType.COUNT, delta.count), (QuotaType.SIZE, delta.size)) if value]
        if once is not None:
            week = (self.today() - EPOCH).days // 7
            shard = once.event_id.int % APPLIED_SHARDS
            weeks = list(range(week - REMEMBERED_WEEKS + 1, week + 1))
            if self.s.one(WAS_APPLIED, (once.group, weeks, shard, once.event_id)) is not None:
                return False
            self._forget_weeks_before(once.group, weeks[0])
            updates.append((MARK_APPLIED, (once.group, week, shard, once.event_id)))
        if updates:
            self.s.execute_counter_batch(updates)
        return True

    def _forget_weeks_before(self, group: str, first_remembered: int) -> None:
        """Drop the partitions of the two weeks before the remembered ones, once per process and week."""
        with self._lock:
            if (group, first_remembered) in self._forgotten:
                return
            self._forgotten.add((group, first_remembered))
        try:
            self.s.execute_concurrently([(FORGET_WEEK, (group, week, shard))
                                         for week in (first_remembered - 2, first_remembered - 1)
                                         for shard in range(APPLIED_SHARDS)])
        except Exception:   # housekeeping: the event being counted must not fail for it; next event retries
            log.warning("could not delete the %s records of weeks before %d; will retry", group, first_remembered,
                        exc_info=True)
            with self._lock:
                self._forgotten.discard((group, first_remembered))

    def defined_limits(self, key: LimitKey) -> QuotaLimits:
        rows = self.s.execute("SELECT quotaType, quotaLimit FROM quotaLimit WHERE quotaScope = ? AND identifier = ? "
                              "AND quotaComponent = ?", (key.scope.value, key.identifier, COMPONENT))
        values = {r["quotatype"]: _decode(r["quotalimit"]) for r in rows}
        return QuotaLimits(values.get(QuotaType.COUNT.value), values.get(QuotaType.SIZE.value))

    def _store_limit(self, key: LimitKey, quota_type: QuotaType, value: int | None) -> None:
        if value is None:   # no row = not set at this scope (a null row reads the same, but is noise)
            self.s.execute("DELETE FROM quotaLimit WHERE quotaScope = ? AND identifier = ? AND quotaComponent = ? "
                           "AND quotaType = ?", (key.scope.value, key.identifier, COMPONENT, quota_type.value))
            return
        self.s.execute("INSERT INTO quotaLimit (quotaScope, identifier, quotaComponent, quotaType, quotaLimit) "
                       "VALUES (?, ?, ?, ?, ?)", (key.scope.value, key.identifier, COMPONENT, quota_type.value, value))


def _decode(value: int | None) -> int | None:
    return 0 if value is not None and value < UNLIMITED else value
