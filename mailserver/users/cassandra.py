"""``UsersRepository`` on James's ``user`` table.

Columns: ``name`` (PK, lower-cased username), ``realname``, ``passwd``, ``algorithm``,
``authorized_users``, ``delegated_users``. As in James's CassandraUsersDAO, creation, removal
and password change are lightweight transactions (``IF NOT EXISTS`` / ``IF EXISTS``), so a
concurrent creation of the same user has one winner and a password change never resurrects a
removed user. ``realname`` is set to the username on creation (James does the same); the
delegation columns are never written here, so a password change keeps them.
"""

from __future__ import annotations

from collections.abc import Iterator

from mailserver.cassandra.session import CassandraSession
from mailserver.domains.api import DomainList
from mailserver.model.address import Username
from mailserver.model.passwords import HashedPassword, PasswordHasher
from mailserver.users.api import UsersRepository


class CassandraUsersRepository(UsersRepository):
    def __init__(self, session: CassandraSession, domains: DomainList | None, *, virtual_hosting: bool = True,
                 hasher: PasswordHasher | None = None) -> None:
        super().__init__(domains, virtual_hosting=virtual_hosting, hasher=hasher)
        self.s = session

    def _insert(self, username: Username, password: HashedPassword) -> bool:
        return self.s.execute_lwt("INSERT INTO user (name, realname, passwd, algorithm) VALUES (?, ?, ?, ?) "
                                  "IF NOT EXISTS", (username.value, username.value, password.value,
                                                    password.algorithm))

    def _load(self, username: Username) -> HashedPassword | None:
        row = self.s.one("SELECT passwd, algorithm FROM user WHERE name = ?", (username.value,))
        if row is None:
            return None
        return HashedPassword(row["algorithm"] or "", row["passwd"] or "")

    def _delete(self, username: Username) -> bool:
        return self.s.execute_lwt("DELETE FROM user WHERE name = ? IF EXISTS", (username.value,))

    def _update(self, username: Username, password: HashedPassword) -> bool:
        return self.s.execute_lwt("UPDATE user SET passwd = ?, algorithm = ? WHERE name = ? IF EXISTS",
                                  (password.value, password.algorithm, username.value))

    def _replace(self, username: Username, expected: HashedPassword, password: HashedPassword) -> bool:
        return self.s.execute_lwt("UPDATE user SET passwd = ?, algorithm = ? WHERE name = ? IF passwd = ?",
                                  (password.value, password.algorithm, username.value, expected.value))

    def _names(self) -> Iterator[Username]:
        # Names are listed as stored (a row written by another tool is not re-validated); the
        # driver pages through the full scan.
        return (Username(row["name"]) for row in self.s.execute("SELECT name FROM user"))

    def count(self) -> int:
        row = self.s.one("SELECT COUNT(*) AS n FROM user")
        return int(row["n"]) if row else 0
