"""12 -> 13: legacy ``currentQuota`` counters -> ``quotaCurrentValue`` (MAILBOX, count/size)
(James's CassandraCurrentQuotaManagerMigration).

The identifier changes form: the legacy key is ``QuotaRoot.getValue()``, the new one
``QuotaRoot.asString()`` (``@<domain>`` appended when the root has a domain). James walks the
users repository; we walk the legacy table itself, so roots of removed users are copied too.
"""

from __future__ import annotations

from collections import Counter

from mailserver.cassandra.migrations.base import Migration, MigrationResult, scan, table_exists
from mailserver.cassandra.migrations.legacy import CURRENT_QUOTA
from mailserver.cassandra.migrations.quota_common import set_current_value, user_quota_root
from mailserver.model.quota import QuotaComponent, QuotaType

SCAN = "SELECT quotaRoot, messageCount, storage FROM currentQuota"


class CurrentQuotaMigration(Migration):
    from_version = 12
    to_version = 13

    def run(self) -> MigrationResult:
        counters: Counter[str] = Counter(processed=0, updated=0, unchanged=0, errors=0)
        if not table_exists(self.s, CURRENT_QUOTA.name):
            self.log.info("No %s table (quota compatibility mode off): nothing to migrate", CURRENT_QUOTA.name)
            return MigrationResult.of(counters)
        for row in scan(self.s, SCAN):
            counters["processed"] += 1
            try:
                identifier = user_quota_root(row["quotaroot"]).as_string()
                written = [set_current_value(self.s, identifier, QuotaComponent.MAILBOX, quota_type, value or 0)
                           for quota_type, value in ((QuotaType.COUNT, row["messagecount"]),
                                                     (QuotaType.SIZE, row["storage"]))]
                counters["updated" if any(written) else "unchanged"] += 1
            except Exception:
                self.log.exception("Failed to migrate the current quota of %s", row["quotaroot"])
                counters["errors"] += 1
        return MigrationResult.of(counters)
