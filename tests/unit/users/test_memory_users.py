"""The UsersRepository contract on the memory adapter, and the settings the contract does not cover."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.users.api import InvalidUsername
from mailserver.users.memory import MemoryUsersRepository
from tests.contract.users_contract import UsersRepositoryContract


class TestMemoryUsersRepository(UsersRepositoryContract):
    @pytest.fixture
    def domain_list(self):
        return MemoryDomainList()

    @pytest.fixture
    def users(self, domain_list):
        return MemoryUsersRepository(domain_list)


def test_without_virtual_hosting_names_have_no_domain():
    users = MemoryUsersRepository(None, virtual_hosting=False)
    users.add_user("alice", "pw")
    assert users.verify("ALICE", "pw")
    with pytest.raises(InvalidUsername, match="needs virtual hosting"):
        users.add_user("bob@d.test", "pw")


def test_virtual_hosting_needs_a_domain_list():
    with pytest.raises(ValueError, match="DomainList"):
        MemoryUsersRepository(None)
