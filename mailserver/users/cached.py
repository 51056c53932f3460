"""Which accounts exist, remembered for a few seconds (``MAILSERVER_USERS_READ_CACHE_MS``).

Why: every mail asks whether its recipients are local users three times (SMTP at RCPT, the
``RecipientIsLocal`` matcher, LocalDelivery), each a Cassandra read of the ``user`` table.

Only "yes" is kept: a user created a moment ago gets mail at once (a remembered "no" would bounce
their first mails with ``550 5.1.1``), and an unknown recipient is always read again. A user
removed on another node is still taken for up to ``ttl``; removed through this process, at once.
Passwords are never cached: ``verify`` reads the stored hash every time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from mailserver.model.address import Username
from mailserver.model.passwords import HashedPassword
from mailserver.read_cache import ReadThroughCache
from mailserver.users.api import UsersRepository, _as_username

DEFAULT_TTL_SECONDS = 10.0
MAX_ENTRIES = 100_000


class CachedUsersRepository(UsersRepository):
    def __init__(self, inner: UsersRepository, *, ttl: float = DEFAULT_TTL_SECONDS, max_entries: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(inner.domains, virtual_hosting=inner.virtual_hosting, hasher=inner.hasher)
        self.inner = inner
        self._present: ReadThroughCache[Username, bool] = ReadThroughCache(
            ttl=ttl, max_entries=max_entries, clock=clock, what="users cache")

    def contains(self, username: Username | str) -> bool:
        user = _as_username(username)
        return self._present.get(user, lambda u: self.inner._load(u) is not None, keep=bool)

    def remove_user(self, username: Username | str) -> None:
        user = _as_username(username)
        try:
            super().remove_user(user)
        finally:
            self._present.forget(user)

    # The storage primitives are the inner repository's.
    def _insert(self, username: Username, password: HashedPassword) -> bool:
        return self.inner._insert(username, password)

    def _load(self, username: Username) -> HashedPassword | None:
        return self.inner._load(username)

    def _delete(self, username: Username) -> bool:
        return self.inner._delete(username)

    def _update(self, username: Username, password: HashedPassword) -> bool:
        return self.inner._update(username, password)

    def _replace(self, username: Username, expected: HashedPassword, password: HashedPassword) -> bool:
        return self.inner._replace(username, expected, password)

    def _names(self) -> Iterator[Username]:
        return self.inner._names()
