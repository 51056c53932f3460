"""``DelegationStore`` on the ``authorized_users`` / ``delegated_users`` sets of James's ``user``
table, with James's statements (``CassandraUsersDAO``): set appends and removals in logged batches."""

from __future__ import annotations

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username
from mailserver.users.delegation import DelegationStore, UserExists

ADD_AUTHORIZED = "UPDATE user SET authorized_users = authorized_users + ? WHERE name = ?"
REMOVE_AUTHORIZED = "UPDATE user SET authorized_users = authorized_users - ? WHERE name = ?"
CLEAR_AUTHORIZED = "DELETE authorized_users FROM user WHERE name = ?"
ADD_DELEGATED = "UPDATE user SET delegated_users = delegated_users + ? WHERE name = ?"
REMOVE_DELEGATED = "UPDATE user SET delegated_users = delegated_users - ? WHERE name = ?"


class CassandraDelegationStore(DelegationStore):
    def __init__(self, session: CassandraSession, exists: UserExists) -> None:
        self.s = session
        self._exists = exists

    def authorized_users(self, base: Username) -> list[Username]:
        return self._set("authorized_users", base)

    def delegated_users(self, delegate: Username) -> list[Username]:
        return self._set("delegated_users", delegate)

    def add_authorized_user(self, base: Username, delegate: Username) -> None:
        statements = [(ADD_AUTHORIZED, ({delegate.value}, base.value))]
        if self._exists(delegate):
            statements.append((ADD_DELEGATED, ({base.value}, delegate.value)))
        self.s.execute_logged_batch(statements)

    def remove_authorized_user(self, base: Username, delegate: Username) -> None:
        self.s.execute_logged_batch([(REMOVE_AUTHORIZED, ({delegate.value}, base.value)),
                                     (REMOVE_DELEGATED, ({base.value}, delegate.value))])

    def clear(self, base: Username) -> None:
        delegates = self.authorized_users(base)
        self.s.execute_logged_batch([*((REMOVE_DELEGATED, ({base.value}, d.value)) for d in delegates),
                                     (CLEAR_AUTHORIZED, (base.value,))])

    def _set(self, column: str, user: Username) -> list[Username]:
        row = self.s.one(f"SELECT {column} FROM user WHERE name = ?", (user.value,))
        return [Username(name) for name in sorted((row or {}).get(column) or ())]
