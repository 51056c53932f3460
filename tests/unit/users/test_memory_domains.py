"""The DomainList contract on the memory adapter."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from tests.contract.domains_contract import DomainListContract


class TestMemoryDomainList(DomainListContract):
    @pytest.fixture
    def domain_list(self):
        return MemoryDomainList()


def test_initial_domains_are_registered():
    assert [d.name for d in MemoryDomainList(["B.test", "a.test"]).list()] == ["a.test", "b.test"]
