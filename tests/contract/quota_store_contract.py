"""Behaviour every ``QuotaStore`` adapter gives (memory and Cassandra): limits per scope, as James stores them.

Subclasses provide the ``store`` fixture. Users and domains are unique per test; the global
limits are shared by the whole keyspace, so the ``global_limits`` fixture puts them back.
"""

from __future__ import annotations

import uuid

import pytest

from mailserver.mailbox.store import AppliedEvent, QuotaStore
from mailserver.model.address import Domain, Username
from mailserver.model.quota import LimitKey, QuotaLimits, QuotaRoot, QuotaScope, QuotaType, QuotaUsage


class QuotaStoreContract:
    @pytest.fixture
    def store(self) -> QuotaStore:
        raise NotImplementedError

    @pytest.fixture
    def domain(self) -> Domain:
        return Domain.of(f"q{uuid.uuid4().hex[:10]}.test")

    @pytest.fixture
    def root(self, domain) -> QuotaRoot:
        return QuotaRoot.for_user(Username.of(f"bob@{domain}"))

    @pytest.fixture
    def global_limits(self, store):
        """The global limits of the keyspace, restored after the test (other tests share them)."""
        saved = store.defined_limits(LimitKey.global_())
        store.set_global_limits(QuotaLimits())
        yield
        store.set_global_limits(saved)

    def test_nothing_is_set_by_default(self, store, root, domain):
        assert store.defined_limits(LimitKey.user(root)) == QuotaLimits()
        assert store.defined_limits(LimitKey.domain(domain)) == QuotaLimits()

    def test_one_type_is_set_and_removed_without_touching_the_other(self, store, root):
        key = LimitKey.user(root)
        store.set_limit(key, QuotaType.COUNT, 42)
        store.set_limit(key, QuotaType.SIZE, 1000)
        store.set_limit(key, QuotaType.COUNT, None)
        assert store.defined_limits(key) == QuotaLimits(None, 1000)

    def test_minus_one_is_kept_as_unlimited_and_zero_as_zero(self, store, root, domain):
        store.set_limits(LimitKey.user(root), QuotaLimits(-1, 0))
        assert store.defined_limits(LimitKey.user(root)) == QuotaLimits(-1, 0)
        assert store.limits(root) == QuotaLimits(-1, 0)
        assert store.limits(root).unlimited is False   # a size of 0 is a limit

    def test_values_below_minus_one_are_refused_and_write_nothing(self, store, root):
        key = LimitKey.user(root)
        store.set_limit(key, QuotaType.COUNT, 7)
        for bad in (-2, 1.5, "3", True):
            with pytest.raises(ValueError):
                store.set_limit(key, QuotaType.COUNT, bad)
        assert store.defined_limits(key) == QuotaLimits(7, None)

    def test_scopes_are_kept_apart(self, store, root, domain, global_limits):
        store.set_user_limits(root, QuotaLimits(count=5))
        store.set_domain_limits(domain, QuotaLimits(size=500))
        store.set_global_limits(QuotaLimits(count=50, size=5000))
        assert store.limits_by_scope(root) == {QuotaScope.USER: QuotaLimits(5, None),
                                               QuotaScope.DOMAIN: QuotaLimits(None, 500),
                                               QuotaScope.GLOBAL: QuotaLimits(50, 5000)}
        other = QuotaRoot.for_user(Username.of(f"alice@other-{domain}"))
        assert store.limits_by_scope(other) == {QuotaScope.USER: QuotaLimits(), QuotaScope.DOMAIN: QuotaLimits(),
                                                QuotaScope.GLOBAL: QuotaLimits(50, 5000)}

    def test_effective_limits_are_user_then_domain_then_global_per_type(self, store, root, domain, global_limits):
        store.set_global_limits(QuotaLimits(count=100, size=10_000))
        assert store.limits(root) == QuotaLimits(100, 10_000)
        store.set_domain_limits(domain, QuotaLimits(count=10))
        assert store.limits(root) == QuotaLimits(10, 10_000)
        store.set_user_limits(root, QuotaLimits(size=-1))   # unlimited at user level lifts the global size
        assert store.limits(root) == QuotaLimits(10, -1)
        store.set_user_limits(root, QuotaLimits(count=3))
        assert store.limits(root) == QuotaLimits(3, 10_000)
        store.set_domain_limits(domain, QuotaLimits())
        store.set_user_limits(root, QuotaLimits())
        assert store.limits(root) == QuotaLimits(100, 10_000)

    def test_a_user_without_domain_has_no_domain_scope(self, store, global_limits):
        root = QuotaRoot.for_user(Username.of(f"nodomain{uuid.uuid4().hex[:8]}"))
        store.set_user_limits(root, QuotaLimits(count=1))
        assert store.limits_by_scope(root) == {QuotaScope.USER: QuotaLimits(1, None), QuotaScope.GLOBAL: QuotaLimits()}

    def test_current_usage_is_independent_of_limits(self, store, root):
        store.increase(root, QuotaUsage(2, 300))
        store.set_user_limits(root, QuotaLimits(1, 1))
        assert store.current(root) == QuotaUsage(2, 300)

    def test_an_event_applied_once_is_not_counted_again(self, store, root):
        event = AppliedEvent("quota-group", uuid.uuid4())
        assert store.increase(root, QuotaUsage(1, 100), once=event) is True
        assert store.increase(root, QuotaUsage(1, 100), once=event) is False
        assert store.current(root) == QuotaUsage(1, 100)

    def test_the_same_event_counts_once_per_group(self, store, root):
        event_id = uuid.uuid4()
        store.increase(root, QuotaUsage(1, 100), once=AppliedEvent("group-a", event_id))
        store.increase(root, QuotaUsage(1, 100), once=AppliedEvent("group-b", event_id))
        store.increase(root, QuotaUsage(1, 100), once=AppliedEvent("group-a", event_id))
        assert store.current(root) == QuotaUsage(2, 200)

    def test_without_a_record_every_increase_counts(self, store, root):
        store.increase(root, QuotaUsage(1, 100))
        store.increase(root, QuotaUsage(-1, -100))
        store.increase(root, QuotaUsage(2, 50))
        assert store.current(root) == QuotaUsage(2, 50)
