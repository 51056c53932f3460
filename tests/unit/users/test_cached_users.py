"""The users cache: the UsersRepository contract through it, and what it keeps and for how long."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.runtime.settings import ServeSettings, SettingsError
from mailserver.users.cached import CachedUsersRepository
from mailserver.users.memory import MemoryUsersRepository
from tests.contract.users_contract import UsersRepositoryContract
from tests.support.clock import ManualClock


class TestCachedUsersRepository(UsersRepositoryContract):
    @pytest.fixture
    def domain_list(self):
        return MemoryDomainList()

    @pytest.fixture
    def users(self, domain_list):
        return CachedUsersRepository(MemoryUsersRepository(domain_list))


class CountingReads(MemoryUsersRepository):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reads: list[str] = []

    def _load(self, username):
        self.reads.append(username.value)
        return super()._load(username)


@pytest.fixture
def shared():
    """The table every node reads."""
    return CountingReads(MemoryDomainList(["d.test"]))


def test_a_known_user_is_read_once_per_time_to_live(shared):
    shared.add_user("bob@d.test", "pw")
    clock = ManualClock()
    cached = CachedUsersRepository(shared, ttl=10, clock=clock)

    assert all(cached.contains("bob@d.test") for _ in range(5))
    assert shared.reads == ["bob@d.test"]
    clock.now += 10.5
    assert cached.contains("Bob@D.test")
    assert shared.reads == ["bob@d.test", "bob@d.test"]


def test_an_unknown_user_is_read_every_time_so_a_new_account_gets_mail_at_once(shared):
    cached = CachedUsersRepository(shared, ttl=3600, clock=ManualClock())
    assert not cached.contains("new@d.test")
    assert not cached.contains("new@d.test")
    shared.add_user("new@d.test", "pw")        # created through another node
    assert cached.contains("new@d.test")
    assert shared.reads == ["new@d.test"] * 3


def test_a_user_removed_on_another_node_is_taken_for_the_time_to_live_only(shared):
    shared.add_user("gone@d.test", "pw")
    clock = ManualClock()
    cached = CachedUsersRepository(shared, ttl=10, clock=clock)
    assert cached.contains("gone@d.test")
    shared.remove_user("gone@d.test")

    assert cached.contains("gone@d.test")
    clock.now += 10.5
    assert not cached.contains("gone@d.test")


def test_a_user_removed_through_the_cache_is_gone_at_once(shared):
    cached = CachedUsersRepository(shared, ttl=3600, clock=ManualClock())
    cached.add_user("me@d.test", "pw")
    assert cached.contains("me@d.test")
    cached.remove_user("ME@d.test")
    assert not cached.contains("me@d.test")


def test_passwords_are_never_cached(shared):
    cached = CachedUsersRepository(shared, ttl=3600, clock=ManualClock())
    cached.add_user("pw@d.test", "old")
    assert cached.verify("pw@d.test", "old")
    shared.update_password("pw@d.test", "new")   # changed through another node
    assert not cached.verify("pw@d.test", "old")
    assert cached.verify("pw@d.test", "new")


def test_the_setting_turns_it_off_and_refuses_a_negative_time():
    assert ServeSettings.from_env({}).users_cache_seconds == 10
    assert ServeSettings.from_env({"MAILSERVER_USERS_READ_CACHE_MS": "0"}).users_cache_seconds == 0
    with pytest.raises(SettingsError, match="MAILSERVER_USERS_READ_CACHE_MS"):
        ServeSettings.from_env({"MAILSERVER_USERS_READ_CACHE_MS": "-1"})
