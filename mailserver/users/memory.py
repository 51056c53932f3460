"""In-memory ``UsersRepository`` for unit tests and single-process use."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from mailserver.domains.api import DomainList
from mailserver.model.address import Username
from mailserver.model.passwords import HashedPassword, PasswordHasher
from mailserver.users.api import UsersRepository


class MemoryUsersRepository(UsersRepository):
    def __init__(self, domains: DomainList | None, *, virtual_hosting: bool = True,
                 hasher: PasswordHasher | None = None) -> None:
        super().__init__(domains, virtual_hosting=virtual_hosting, hasher=hasher)
        self._users: dict[Username, HashedPassword] = {}
        self._lock = threading.Lock()

    def _insert(self, username: Username, password: HashedPassword) -> bool:
        with self._lock:
            if username in self._users:
                return False
            self._users[username] = password
            return True

    def _load(self, username: Username) -> HashedPassword | None:
        with self._lock:
            return self._users.get(username)

    def _delete(self, username: Username) -> bool:
        with self._lock:
            return self._users.pop(username, None) is not None

    def _update(self, username: Username, password: HashedPassword) -> bool:
        with self._lock:
            if username not in self._users:
                return False
            self._users[username] = password
            return True

    def _replace(self, username: Username, expected: HashedPassword, password: HashedPassword) -> bool:
        with self._lock:
            if self._users.get(username) != expected:
                return False
            self._users[username] = password
            return True

    def _names(self) -> Iterator[Username]:
        with self._lock:
            names = sorted(self._users)
        return iter(names)
