"""The RecipientRewriteTable contract on the memory adapter."""

from __future__ import annotations

import pytest

from mailserver.domains.memory import MemoryDomainList
from mailserver.rrt.memory import MemoryRecipientRewriteTable
from tests.contract.rrt_contract import RecipientRewriteTableContract


class TestMemoryRecipientRewriteTable(RecipientRewriteTableContract):
    @pytest.fixture
    def domain_list(self):
        return MemoryDomainList()

    @pytest.fixture
    def rrt(self, domain_list):
        return MemoryRecipientRewriteTable(domain_list)
