"""The DomainList contract on the memory adapter."""

from __future__ import annotations

import pytest

from mailserver.domains.cached import CachedDomainList
from mailserver.domains.memory import MemoryDomainList
from tests.contract.domains_contract import DomainListContract
from tests.support.clock import ManualClock


class TestMemoryDomainList(DomainListContract):
    @pytest.fixture
    def domain_list(self):
        return MemoryDomainList()


def test_initial_domains_are_registered():
    assert [d.name for d in MemoryDomainList(["B.test", "a.test"]).list()] == ["a.test", "b.test"]


class TestCachedDomainList(DomainListContract):
    @pytest.fixture
    def domain_list(self):
        return CachedDomainList(MemoryDomainList())


def test_cached_answers_hide_another_nodes_change_for_the_time_to_live_only():
    shared = MemoryDomainList()          # the table every node reads
    clock = ManualClock()
    cached = CachedDomainList(shared, ttl=10, clock=clock)
    assert not cached.contains("late.test")
    shared.add("late.test")              # added through another node

    assert not cached.contains("late.test")   # the cached "no", for up to 10 s
    clock.now += 10.5
    assert cached.contains("late.test")

    shared.remove("late.test")
    assert cached.contains("late.test")
    clock.now += 10.5
    assert not cached.contains("late.test")


def test_changes_made_through_the_cache_are_seen_at_once():
    cached = CachedDomainList(MemoryDomainList(), ttl=3600)
    assert not cached.contains("Mine.TEST")
    cached.add("mine.test")
    assert cached.contains("mine.test")
    cached.remove("MINE.test.")
    assert not cached.contains("mine.test")


def test_a_cached_answer_costs_no_read():
    reads = []

    class Counting(MemoryDomainList):
        def _exists(self, domain):
            reads.append(domain)
            return super()._exists(domain)

    cached = CachedDomainList(Counting(["a.test"]), ttl=3600)
    assert all(cached.contains("a.test") for _ in range(5)) and not cached.contains("b.test")
    assert not cached.contains("b.test")
    assert len(reads) == 2
