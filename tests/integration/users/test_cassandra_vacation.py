"""The Cassandra ``VacationRepository`` meets the adapters' contract on James's ``vacation`` rows."""

from __future__ import annotations

import pytest

from mailserver.vacation.cassandra import CassandraVacationRepository
from tests.contract.vacation_repository_contract import FROM, VacationRepositoryContract, account

pytestmark = pytest.mark.integration


class TestCassandraVacationRepository(VacationRepositoryContract):
    @pytest.fixture
    def vacations(self, cassandra) -> CassandraVacationRepository:
        return CassandraVacationRepository(cassandra)


def test_the_row_is_james_s(cassandra):
    user = account()
    CassandraVacationRepository(cassandra).modify(user, {"enabled": True, "from_date": FROM, "subject": "Out"})
    row = cassandra.one("SELECT is_enabled, from_date, subject, text FROM vacation WHERE account_id = ?", (user,))
    assert row is not None
    assert (row["is_enabled"], row["subject"], row["text"]) == (True, "Out", None)
    assert (row["from_date"].date, row["from_date"].timezone) == (FROM.replace(tzinfo=None), "Z")
