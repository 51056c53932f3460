"""13 -> 14: legacy mailbox limits -> ``quotaLimit`` (James's CassandraPerUserMaxQuotaManagerMigration).

* ``defaultMaxQuota2`` row 'default' -> scope global, identifier 'global';
* ``domainMaxQuota`` -> scope domain, identifier = the domain;
* ``maxQuota`` -> scope user, identifier = the legacy key ``QuotaRoot.getValue()`` (no domain suffix).

James walks the domain list and the users repository; we walk the legacy tables themselves.
"""

from __future__ import annotations

from collections import Counter

from mailserver.cassandra.migrations.base import Migration, MigrationResult, scan, table_exists
from mailserver.cassandra.migrations.legacy import DEFAULT_MAX_QUOTA, DOMAIN_MAX_QUOTA, MAX_QUOTA
from mailserver.cassandra.migrations.quota_common import set_limit
from mailserver.model.quota import QuotaComponent, QuotaScope, QuotaType

DEFAULT_KEY = "default"
GLOBAL_IDENTIFIER = "global"


class MaxQuotaMigration(Migration):
    from_version = 13
    to_version = 14

    def run(self) -> MigrationResult:
        counters: Counter[str] = Counter(global_limits=0, domain_limits=0, user_limits=0, errors=0)
        if table_exists(self.s, DEFAULT_MAX_QUOTA.name):
            for row in scan(self.s, "SELECT key, message, storage FROM defaultMaxQuota2"):
                if row["key"] != DEFAULT_KEY:
                    self.log.warning("Ignoring defaultMaxQuota2 row with unexpected key %r", row["key"])
                    continue
                self._copy(counters, "global_limits", QuotaScope.GLOBAL, GLOBAL_IDENTIFIER,
                           row["message"], row["storage"])
        if table_exists(self.s, DOMAIN_MAX_QUOTA.name):
            for row in scan(self.s, "SELECT domain, maxMessageCount, maxStorage FROM domainMaxQuota"):
                self._copy(counters, "domain_limits", QuotaScope.DOMAIN, row["domain"],
                           row["maxmessagecount"], row["maxstorage"])
        if table_exists(self.s, MAX_QUOTA.name):
            for row in scan(self.s, "SELECT quotaRoot, maxMessageCount, maxStorage FROM maxQuota"):
                self._copy(counters, "user_limits", QuotaScope.USER, row["quotaroot"],
                           row["maxmessagecount"], row["maxstorage"])
        return MigrationResult.of(counters)

    def _copy(self, counters: Counter[str], counter: str, scope: QuotaScope, identifier: str,
              count: int | None, size: int | None) -> None:
        try:
            for quota_type, value in ((QuotaType.COUNT, count), (QuotaType.SIZE, size)):
                counters[counter] += set_limit(self.s, scope, identifier, QuotaComponent.MAILBOX, quota_type, value)
        except Exception:
            self.log.exception("Failed to migrate the %s limits of %s", scope.value, identifier)
            counters["errors"] += 1
