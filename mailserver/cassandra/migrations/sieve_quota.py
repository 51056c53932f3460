"""14 -> 15: legacy sieve quotas -> mutualised tables, component SIEVE, type size (James's SieveQuotaMigration).

* ``sieve_cluster_quota`` row 'cluster_quota' -> quotaLimit scope global, identifier 'GLOBAL'
  (upper case: James's CassandraSieveQuotaDAOV2.GLOBAL, unlike the mailbox's 'global');
* ``sieve_quota`` -> quotaLimit scope user, identifier = username;
* ``sieve_space`` -> quotaCurrentValue, identifier = username, set to the legacy value. James
  *increments* by the legacy value, which a re-run doubles; we add (legacy - stored) instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from mailserver.cassandra.migrations.base import Migration, MigrationResult, scan, table_exists
from mailserver.cassandra.migrations.legacy import SIEVE_CLUSTER_QUOTA, SIEVE_QUOTA, SIEVE_SPACE
from mailserver.cassandra.migrations.quota_common import set_current_value, set_limit
from mailserver.model.quota import QuotaComponent, QuotaScope, QuotaType

CLUSTER_QUOTA_NAME = "cluster_quota"
GLOBAL_IDENTIFIER = "GLOBAL"
SIEVE, SIZE = QuotaComponent.SIEVE, QuotaType.SIZE


class SieveQuotaMigration(Migration):
    from_version = 14
    to_version = 15

    def run(self) -> MigrationResult:
        counters: Counter[str] = Counter(global_limits=0, user_limits=0, current_values=0, errors=0)
        if table_exists(self.s, SIEVE_CLUSTER_QUOTA.name):
            for row in scan(self.s, "SELECT name, value FROM sieve_cluster_quota"):
                if row["name"] != CLUSTER_QUOTA_NAME:
                    self.log.warning("Ignoring sieve_cluster_quota row with unexpected name %r", row["name"])
                    continue
                self._write(counters, "global_limits", row, lambda r: set_limit(
                    self.s, QuotaScope.GLOBAL, GLOBAL_IDENTIFIER, SIEVE, SIZE, r["value"]))
        if table_exists(self.s, SIEVE_QUOTA.name):
            for row in scan(self.s, "SELECT user_name, quota FROM sieve_quota"):
                self._write(counters, "user_limits", row, lambda r: set_limit(
                    self.s, QuotaScope.USER, r["user_name"], SIEVE, SIZE, r["quota"]))
        if table_exists(self.s, SIEVE_SPACE.name):
            for row in scan(self.s, "SELECT user_name, space_used FROM sieve_space"):
                self._write(counters, "current_values", row, lambda r: set_current_value(
                    self.s, r["user_name"], SIEVE, SIZE, r["space_used"] or 0))
        return MigrationResult.of(counters)

    def _write(self, counters: Counter[str], counter: str, row: dict, write: Callable[[dict], bool]) -> None:
        try:
            counters[counter] += write(row)
        except Exception:
            self.log.exception("Failed to migrate sieve quota row %s", row)
            counters["errors"] += 1
