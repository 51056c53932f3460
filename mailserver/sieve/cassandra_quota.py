"""``SieveQuotas`` on the mutualised ``quotaLimit`` table, as James's ``CassandraSieveQuotaDAOV2``:
component ``SIEVE``, type ``size``; the default at scope ``global`` under the identifier
``GLOBAL`` (upper case, unlike the mailbox's ``global``), a user's at scope ``user`` under the
username."""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username
from mailserver.model.quota import QuotaComponent, QuotaScope, QuotaType
from mailserver.sieve.quota import SieveQuotas

GLOBAL_IDENTIFIER = "GLOBAL"
KEY = "quotaScope = ? AND identifier = ? AND quotaComponent = ? AND quotaType = ?"
SELECT = f"SELECT quotaLimit FROM quotaLimit WHERE {KEY}"
INSERT = ("INSERT INTO quotaLimit (quotaScope, identifier, quotaComponent, quotaType, quotaLimit) "
          "VALUES (?, ?, ?, ?, ?)")
DELETE = f"DELETE FROM quotaLimit WHERE {KEY}"


class CassandraSieveQuotas(SieveQuotas):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def default(self) -> int | None:
        return self._read(QuotaScope.GLOBAL, GLOBAL_IDENTIFIER)

    def set_default(self, limit: int) -> None:
        self.s.execute(INSERT, (*_key(QuotaScope.GLOBAL, GLOBAL_IDENTIFIER), limit))

    def remove_default(self) -> None:
        self.s.execute(DELETE, _key(QuotaScope.GLOBAL, GLOBAL_IDENTIFIER))

    def of(self, user: Username) -> int | None:
        return self._read(QuotaScope.USER, user.value)

    def set(self, user: Username, limit: int) -> None:
        self.s.execute(INSERT, (*_key(QuotaScope.USER, user.value), limit))

    def remove(self, user: Username) -> None:
        self.s.execute(DELETE, _key(QuotaScope.USER, user.value))

    def _read(self, scope: QuotaScope, identifier: str) -> int | None:
        row = self.s.one(SELECT, _key(scope, identifier))
        return None if row is None else row["quotalimit"]


def _key(scope: QuotaScope, identifier: str) -> tuple[str, str, str, str]:
    return scope.value, identifier, QuotaComponent.SIEVE.value, QuotaType.SIZE.value
