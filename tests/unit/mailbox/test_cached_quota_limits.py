"""The quota limits read cache: the quota store contract through it, its time to live, its cost."""

from __future__ import annotations

import pytest

from mailserver.mailbox.cached_quota import CachedLimitsQuotaStore
from mailserver.mailbox.memory import MemoryQuotaStore
from mailserver.model.address import Username
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot, QuotaUsage
from tests.contract.quota_store_contract import QuotaStoreContract
from tests.support.clock import ManualClock


class TestCachedLimitsQuotaStore(QuotaStoreContract):
    @pytest.fixture
    def store(self):
        return CachedLimitsQuotaStore(MemoryQuotaStore())


ROOT = QuotaRoot.for_user(Username.of("bob@cache-quota.test"))


def test_another_nodes_limit_change_is_hidden_for_the_time_to_live_only():
    shared, clock = MemoryQuotaStore(), ManualClock()      # the table every node reads
    cached = CachedLimitsQuotaStore(shared, ttl=10, clock=clock)
    assert cached.limits(ROOT) == QuotaLimits()
    shared.set_user_limits(ROOT, QuotaLimits(5, 500))   # set through another node

    assert cached.limits(ROOT) == QuotaLimits()
    clock.now += 10.5
    assert cached.limits(ROOT) == QuotaLimits(5, 500)


def test_limits_set_through_the_cache_are_seen_at_once():
    cached = CachedLimitsQuotaStore(MemoryQuotaStore(), ttl=3600)
    assert cached.limits(ROOT) == QuotaLimits()
    cached.set_user_limits(ROOT, QuotaLimits(5, 500))
    assert cached.limits(ROOT) == QuotaLimits(5, 500)
    cached.set_global_limits(QuotaLimits(1, None))
    cached.set_user_limits(ROOT, QuotaLimits())
    assert cached.limits(ROOT) == QuotaLimits(1, None)


def test_usage_is_never_cached():
    shared = MemoryQuotaStore()
    cached = CachedLimitsQuotaStore(shared, ttl=3600)
    assert cached.current(ROOT) == QuotaUsage(0, 0)
    shared.increase(ROOT, QuotaUsage(2, 20))
    assert cached.current(ROOT) == QuotaUsage(2, 20)


def test_cached_limits_cost_no_read():
    reads: list[LimitKey] = []

    class Counting(MemoryQuotaStore):
        def defined_limits(self, key):
            reads.append(key)
            return super().defined_limits(key)

    cached = CachedLimitsQuotaStore(Counting(), ttl=3600)
    for _ in range(5):
        cached.limits(ROOT)
    assert len(reads) == 3    # user, domain, global: once each


def test_the_server_caches_limits_ten_seconds_unless_set_to_zero():
    from mailserver.runtime.settings import ServeSettings, SettingsError

    assert ServeSettings.from_env({}).quota_limits_cache_seconds == 10.0
    assert ServeSettings.from_env({"MAILSERVER_QUOTA_LIMITS_READ_CACHE_MS": "0"}).quota_limits_cache_seconds == 0
    with pytest.raises(SettingsError, match="MAILSERVER_QUOTA_LIMITS_READ_CACHE_MS"):
        ServeSettings.from_env({"MAILSERVER_QUOTA_LIMITS_READ_CACHE_MS": "-1"})
