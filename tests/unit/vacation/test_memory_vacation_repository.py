"""The memory ``VacationRepository`` meets the adapters' contract."""

from __future__ import annotations

import pytest

from mailserver.vacation.memory import MemoryVacationRepository
from tests.contract.vacation_repository_contract import VacationRepositoryContract


class TestMemoryVacationRepository(VacationRepositoryContract):
    @pytest.fixture
    def vacations(self) -> MemoryVacationRepository:
        return MemoryVacationRepository()
