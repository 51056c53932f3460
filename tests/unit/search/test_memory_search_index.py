"""The search contract on the memory adapter (a scan over the documents)."""

from __future__ import annotations

import pytest

from mailserver.search.memory import MemorySearchIndex
from tests.contract.search_contract import SearchIndexContract


class TestMemorySearchIndex(SearchIndexContract):
    @pytest.fixture
    def index(self):
        return MemorySearchIndex()
