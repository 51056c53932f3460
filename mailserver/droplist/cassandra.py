"""``DropList`` on James's ``droplist`` table, with James's statements (``CassandraDropListDAO``).

The partition key is (``owner_scope``, ``owner``, ``denied_entity``); listing an owner's entries
filters the table (``ALLOW FILTERING``, a scan), as James does.
"""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.droplist.api import DeniedEntityType, DropList, DropListEntry, OwnerScope, denied_forms
from mailserver.model.address import MailAddress

INSERT = ("INSERT INTO droplist (owner_scope, owner, denied_entity, denied_entity_type) "
          "VALUES (?, ?, ?, ?) IF NOT EXISTS")
DELETE = "DELETE FROM droplist WHERE owner_scope = ? AND owner = ? AND denied_entity = ? IF EXISTS"
LIST = ("SELECT denied_entity, denied_entity_type FROM droplist WHERE owner_scope = ? AND owner = ? "
        "ALLOW FILTERING")
QUERY = "SELECT denied_entity FROM droplist WHERE owner_scope = ? AND owner = ? AND denied_entity IN ?"
QUERY_GLOBAL = "SELECT denied_entity FROM droplist WHERE owner_scope = ? AND denied_entity IN ? ALLOW FILTERING"


class CassandraDropList(DropList):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def add(self, entry: DropListEntry) -> None:
        self.s.execute_lwt(INSERT, (entry.owner_scope.value, entry.owner, entry.denied_entity,
                                    entry.denied_entity_type.value))

    def remove(self, entry: DropListEntry) -> None:
        self.s.execute_lwt(DELETE, (entry.owner_scope.value, entry.owner, entry.denied_entity))

    def list(self, scope: OwnerScope, owner: str) -> list[DropListEntry]:
        return [DropListEntry(scope, owner, _type(row["denied_entity_type"]), row["denied_entity"])
                for row in self.s.execute(LIST, (scope.value, owner))]

    def blocks(self, scope: OwnerScope, owner: str, sender: MailAddress) -> bool:
        forms = list(denied_forms(sender))
        if scope == OwnerScope.GLOBAL:
            return bool(self.s.execute(QUERY_GLOBAL, (scope.value, forms)))
        return bool(self.s.execute(QUERY, (scope.value, owner, forms)))


def _type(stored: str | None) -> DeniedEntityType:
    # James reads anything but DOMAIN as an address.
    return DeniedEntityType.DOMAIN if stored == DeniedEntityType.DOMAIN.value else DeniedEntityType.ADDRESS
