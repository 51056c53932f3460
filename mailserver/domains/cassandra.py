"""``DomainList`` on James's ``domains`` table (PK ``domain``, nothing else).

Add and remove are lightweight transactions (``IF NOT EXISTS`` / ``IF EXISTS``) as in James's
CassandraDomainList, so two admins adding the same domain get exactly one success.
"""

from __future__ import annotations

from collections.abc import Iterable

from mailserver.cassandra.session import CassandraSession
from mailserver.domains.api import DomainList
from mailserver.model.address import Domain


class CassandraDomainList(DomainList):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def _insert(self, domain: Domain) -> bool:
        return self.s.execute_lwt("INSERT INTO domains (domain) VALUES (?) IF NOT EXISTS", (domain.name,))

    def _delete(self, domain: Domain) -> bool:
        return self.s.execute_lwt("DELETE FROM domains WHERE domain = ? IF EXISTS", (domain.name,))

    def _exists(self, domain: Domain) -> bool:
        return self.s.one("SELECT domain FROM domains WHERE domain = ?", (domain.name,)) is not None

    def _all(self) -> Iterable[Domain]:
        # Rows are read as stored: a name written by another tool is listed, not re-validated.
        return [Domain(row["domain"]) for row in self.s.execute("SELECT domain FROM domains")]
