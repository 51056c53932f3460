"""A read cache of quota limits in front of a quota store.

Why: every delivered mail reads its recipient's limits at three scopes (user, domain, global)
twice, once in the quota check before the append and once in the quota listener that publishes
the new usage: six Cassandra reads per mail for values an administrator changes rarely. The
limits defined at each scope are kept ``ttl`` seconds.

What another node changes is seen here within ``ttl``; what this process changes through the
cache is seen at once (the entry is dropped). Current usage is never cached: it changes with
every mail and the quota check must see the latest count.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from mailserver.mailbox.store import AppliedEvent, QuotaStore
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot, QuotaType, QuotaUsage
from mailserver.read_cache import ReadThroughCache

DEFAULT_TTL_SECONDS = 10.0
MAX_ENTRIES = 100_000


class CachedLimitsQuotaStore(QuotaStore):
    def __init__(self, inner: QuotaStore, *, ttl: float = DEFAULT_TTL_SECONDS, max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self._limits: ReadThroughCache[LimitKey, QuotaLimits] = ReadThroughCache(
            ttl=ttl, max_entries=max_entries, clock=clock, what="quota limits cache")

    def current(self, root: QuotaRoot) -> QuotaUsage:
        return self.inner.current(root)

    def increase(self, root: QuotaRoot, delta: QuotaUsage, once: AppliedEvent | None = None) -> bool:
        return self.inner.increase(root, delta, once)

    def defined_limits(self, key: LimitKey) -> QuotaLimits:
        return self._limits.get(key, self.inner.defined_limits)

    def _store_limit(self, key: LimitKey, quota_type: QuotaType, value: int | None) -> None:
        try:
            self.inner._store_limit(key, quota_type, value)
        finally:
            self._limits.forget(key)
