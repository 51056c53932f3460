"""The recipient rewrite table cache: the contract through it, and what it keeps and for how long."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.rrt.cached import CachedRecipientRewriteTable
from mailserver.rrt.mapping import Mapping, MappingSource
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from mailserver.runtime.settings import ServeSettings, SettingsError
from tests.contract.rrt_contract import RecipientRewriteTableContract
from tests.support.clock import ManualClock


class TestCachedRecipientRewriteTable(RecipientRewriteTableContract):
    @pytest.fixture
    def domain_list(self):
        return MemoryDomainList()

    @pytest.fixture
    def rrt(self, domain_list):
        return CachedRecipientRewriteTable(MemoryRecipientRewriteTable(domain_list))


class CountingReads(MemoryRecipientRewriteTable):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[str] = []

    def _stored(self, source):
        self.reads.append(source.as_string())
        return super()._stored(source)


@pytest.fixture
def shared():
    """The table every node reads."""
    return CountingReads(MemoryDomainList(["d.test"]))


SALES = MappingSource.of("sales", "d.test")


def test_an_answer_empty_or_not_is_read_once_per_time_to_live(shared):
    shared.add_alias("sales@d.test", "bob@d.test")
    clock = ManualClock()
    cached = CachedRecipientRewriteTable(shared, ttl=10, clock=clock)
    shared.reads.clear()

    for _ in range(3):
        assert cached.get_stored_mappings(SALES) == [Mapping.alias("bob@d.test")]
        assert cached.get_stored_mappings("nobody@d.test") == []
    assert shared.reads == ["sales@d.test", "nobody@d.test"]
    clock.now += 10.5
    cached.get_stored_mappings(SALES)
    assert shared.reads == ["sales@d.test", "nobody@d.test", "sales@d.test"]


def test_another_nodes_change_applies_within_the_time_to_live(shared):
    clock = ManualClock()
    cached = CachedRecipientRewriteTable(shared, ttl=10, clock=clock)
    assert cached.get_stored_mappings(SALES) == []
    shared.add_alias("sales@d.test", "bob@d.test")      # through another node

    assert cached.get_stored_mappings(SALES) == []
    clock.now += 10.5
    assert cached.get_stored_mappings(SALES) == [Mapping.alias("bob@d.test")]


def test_changes_made_through_the_cache_apply_at_once(shared):
    cached = CachedRecipientRewriteTable(shared, ttl=3600, clock=ManualClock())
    assert cached.get_stored_mappings(SALES) == []
    cached.add_alias("sales@d.test", "bob@d.test")
    assert cached.get_stored_mappings(SALES) == [Mapping.alias("bob@d.test")]
    cached.remove_mapping(SALES, Mapping.alias("bob@d.test"))
    assert cached.get_stored_mappings(SALES) == []


def test_a_cached_answer_cannot_be_changed_by_its_caller(shared):
    shared.add_alias("sales@d.test", "bob@d.test")
    cached = CachedRecipientRewriteTable(shared, ttl=3600, clock=ManualClock())
    cached.get_stored_mappings(SALES).clear()
    assert cached.get_stored_mappings(SALES) == [Mapping.alias("bob@d.test")]


def test_the_setting_turns_it_off_and_refuses_a_negative_time():
    assert ServeSettings.from_env({}).rrt_cache_seconds == 10
    assert ServeSettings.from_env({"MAILSERVER_RRT_READ_CACHE_MS": "0"}).rrt_cache_seconds == 0
    with pytest.raises(SettingsError, match="MAILSERVER_RRT_READ_CACHE_MS"):
        ServeSettings.from_env({"MAILSERVER_RRT_READ_CACHE_MS": "-1"})
