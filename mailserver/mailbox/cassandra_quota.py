"""Quota on the mutualised tables ``quotaCurrentValue`` (counters) and ``quotaLimit``."""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.mailbox.store import QuotaStore
from mailserver.model.address import Domain
from mailserver.model.quota import QuotaComponent, QuotaLimits, QuotaRoot, QuotaScope, QuotaType, QuotaUsage

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

    def _limits(self, scope: QuotaScope, identifier: str) -> QuotaLimits:
        rows = self.s.execute("SELECT quotaType, quotaLimit FROM quotaLimit WHERE quotaScope = ? AND identifier = ? "
                              "AND quotaComponent = ?", (scope.value, identifier, COMPONENT))
        values = {r["quotatype"]: r["quotalimit"] for r in rows}
        return QuotaLimits(values.get(QuotaType.COUNT.value), values.get(QuotaType.SIZE.value))

    def limits(self, root: QuotaRoot) -> QuotaLimits:
        user = self._limits(QuotaScope.USER, root.value)
        domain = self._limits(QuotaScope.DOMAIN, str(root.domain)) if root.domain else QuotaLimits()
        glob = self._limits(QuotaScope.GLOBAL, "global")

        def pick(*values: int | None) -> int | None:
            return next((v for v in values if v is not None), None)

        return QuotaLimits(pick(user.count, domain.count, glob.count), pick(user.size, domain.size, glob.size))

    def _set(self, scope: QuotaScope, identifier: str, limits: QuotaLimits) -> None:
        for quota_type, value in ((QuotaType.COUNT, limits.count), (QuotaType.SIZE, limits.size)):
            if value is None:  # no row = no limit at this scope (a null row would read the same, but is noise)
                self.s.execute("DELETE FROM quotaLimit WHERE quotaScope = ? AND identifier = ? AND quotaComponent = ? "
                               "AND quotaType = ?", (scope.value, identifier, COMPONENT, quota_type.value))
                continue
            self.s.execute("INSERT INTO quotaLimit (quotaScope, identifier, quotaComponent, quotaType, quotaLimit) "
                           "VALUES (?, ?, ?, ?, ?)", (scope.value, identifier, COMPONENT, quota_type.value, value))

    def set_user_limits(self, root: QuotaRoot, limits: QuotaLimits) -> None:
        self._set(QuotaScope.USER, root.value, limits)

    def set_domain_limits(self, domain: Domain, limits: QuotaLimits) -> None:
        self._set(QuotaScope.DOMAIN, str(domain), limits)

    def set_global_limits(self, limits: QuotaLimits) -> None:
        self._set(QuotaScope.GLOBAL, "global", limits)
