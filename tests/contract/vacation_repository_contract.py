"""Behaviour every ``VacationRepository`` adapter must have (memory and Cassandra).

Subclasses provide the ``vacations`` fixture; each test uses its own account id, so a shared
keyspace is fine.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

from mailserver.vacation.api import CLEARED, DISABLED, Vacation, VacationRepository

FROM = datetime(2021, 9, 20, 10, 0, tzinfo=UTC)
TO = datetime(2021, 9, 27, 20, 0, tzinfo=timezone(timedelta(hours=2)))


def account() -> str:
    return f"{uuid.uuid4().hex[:12]}@vacation.test"


class VacationRepositoryContract:
    def test_an_account_without_settings_reads_disabled(self, vacations: VacationRepository):
        assert vacations.get(account()) == DISABLED

    def test_a_full_patch_is_read_back_with_its_offsets(self, vacations: VacationRepository):
        user = account()
        vacations.modify(user, {"enabled": True, "from_date": FROM, "to_date": TO, "subject": "Out",
                                "text_body": "Back soon", "html_body": "<p>Back soon</p>"})
        got = vacations.get(user)
        assert got == Vacation(True, FROM, TO, "Out", "Back soon", "<p>Back soon</p>")
        assert got.to_date is not None and got.to_date.utcoffset() == timedelta(hours=2)

    def test_a_patch_keeps_the_fields_it_does_not_name(self, vacations: VacationRepository):
        user = account()
        vacations.modify(user, {"enabled": True, "from_date": FROM, "subject": "Out", "text_body": "Back soon"})
        vacations.modify(user, {"subject": "More vacation"})
        assert vacations.get(user) == Vacation(True, FROM, None, "More vacation", "Back soon", None)

    def test_clearing_disables_and_removes_every_field(self, vacations: VacationRepository):
        user = account()
        vacations.modify(user, {"enabled": True, "from_date": FROM, "subject": "Out", "html_body": "<p>x</p>"})
        vacations.modify(user, CLEARED)
        assert vacations.get(user) == DISABLED

    def test_accounts_are_apart(self, vacations: VacationRepository):
        first, second = account(), account()
        vacations.modify(first, {"enabled": True})
        assert vacations.get(second) == DISABLED
