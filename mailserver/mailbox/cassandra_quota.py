"""Quota on the mutualised tables ``quotaCurrentValue`` (counters) and ``quotaLimit``.

Limits are written as James's ``CassandraPerUserMaxQuotaManagerV2`` writes them: one row per
(scope, identifier, component, type), ``-1`` for unlimited, no row for "not set". A value below
-1 (never written by us) reads as 0, as James's ``QuotaCodec`` reads it.
"""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.store import QuotaStore
from mailserver.model.quota import UNLIMITED, LimitKey, QuotaComponent, QuotaLimits, QuotaRoot, QuotaType, QuotaUsage

COMPONENT = QuotaComponent.MAILBOX.value


class CassandraQuotaStore(QuotaStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def current(self, root: QuotaRoot) -> QuotaUsage:
        rows = self.s.execute("SELECT quotaType, currentValue FROM quotaCurrentValue "
                              "WHERE identifier = ? AND quotaComponent = ?", (root.as_string(), COMPONENT))
        values = {r["quotatype"]: r["currentvalue"] or 0 for r in rows}
        return QuotaUsage(values.get(QuotaType.COUNT.value, 0), values.get(QuotaType.SIZE.value, 0))

    def increase(self, root: QuotaRoot, delta: QuotaUsage) -> None:
        for quota_type, value in ((QuotaType.COUNT, delta.count), (QuotaType.SIZE, delta.size)):
            if value:
                self.s.execute("UPDATE quotaCurrentValue SET currentValue = currentValue + ? "
                               "WHERE identifier = ? AND quotaComponent = ? AND quotaType = ?",
                               (value, root.as_string(), COMPONENT, quota_type.value))

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
