"""The mail-repository contract on the memory adapter."""

from __future__ import annotations

import pytest

from mailserver.repository.memory import MemoryMailRepositoryStore
from tests.contract.mail_repository_contract import MailRepositoryContract


class TestMemoryMailRepository(MailRepositoryContract):
    @pytest.fixture
    def store(self):
        return MemoryMailRepositoryStore()

    @pytest.fixture
    def read_content(self):
        return lambda content: content.data
