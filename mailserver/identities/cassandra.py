"""``CustomIdentityStore`` on James's ``custom_identity`` table (``CassandraCustomIdentityDAO``).

Partition ``user``, clustering ``id`` (uuid); ``reply_to`` and ``bcc`` are frozen sets of James's
``email_address`` UDT (name, email). An empty set reads back as none, as James's rows do.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from mailserver.cassandra.session import CassandraSession
from mailserver.identities.api import DEFAULT_SORT_ORDER, CustomIdentityStore, EmailAddress, Identity
from mailserver.model.address import Username

COLUMNS = "id, name, email, reply_to, bcc, text_signature, html_signature, may_delete, sort_order"
INSERT = f"INSERT INTO custom_identity (user, {COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
SELECT_ALL = f"SELECT {COLUMNS} FROM custom_identity WHERE user = ?"
SELECT_ONE = f"SELECT {COLUMNS} FROM custom_identity WHERE user = ? AND id = ?"
DELETE_ONE = "DELETE FROM custom_identity WHERE user = ? AND id = ?"


class CassandraCustomIdentityStore(CustomIdentityStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def list(self, user: Username) -> list[Identity]:
        return [_identity(row) for row in self.s.execute(SELECT_ALL, (user.value,))]

    def find(self, user: Username, identity_id: uuid.UUID) -> Identity | None:
        row = self.s.one(SELECT_ONE, (user.value, identity_id))
        return None if row is None else _identity(row)

    def save(self, user: Username, identity: Identity) -> None:
        self.s.execute(INSERT, (user.value, identity.id, identity.name, identity.email,
                                _udts(identity.reply_to), _udts(identity.bcc), identity.text_signature,
                                identity.html_signature, identity.may_delete, identity.sort_order))

    def delete(self, user: Username, ids: Iterable[uuid.UUID]) -> None:
        for identity_id in ids:
            self.s.execute(DELETE_ONE, (user.value, identity_id))


def _udts(addresses: tuple[EmailAddress, ...] | None) -> set[tuple[str | None, str]]:
    return {(a.name, a.email) for a in addresses or ()}


def _addresses(values: Any) -> tuple[EmailAddress, ...] | None:
    if not values:
        return None
    return tuple(sorted((EmailAddress(v.email, v.name) for v in values), key=lambda a: (a.email, a.name or "")))


def _identity(row: dict[str, Any]) -> Identity:
    sort_order = row["sort_order"]
    return Identity(row["id"], row["email"], name=row["name"] or "", reply_to=_addresses(row["reply_to"]),
                    bcc=_addresses(row["bcc"]), text_signature=row["text_signature"] or "",
                    html_signature=row["html_signature"] or "", may_delete=bool(row["may_delete"]),
                    sort_order=DEFAULT_SORT_ORDER if sort_order is None else sort_order)
