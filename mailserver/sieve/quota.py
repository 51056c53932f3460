"""The size limit of a user's Sieve scripts: a default one and one per user (James's
``SieveQuotaRepository``). A limit is a byte count; None = not set."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

from mailserver.model.address import Username


class SieveQuotas(ABC):
    @abstractmethod
    def default(self) -> int | None: ...

    @abstractmethod
    def set_default(self, limit: int) -> None: ...

    @abstractmethod
    def remove_default(self) -> None: ...

    @abstractmethod
    def of(self, user: Username) -> int | None: ...

    @abstractmethod
    def set(self, user: Username, limit: int) -> None: ...

    @abstractmethod
    def remove(self, user: Username) -> None: ...


class MemorySieveQuotas(SieveQuotas):
    def __init__(self) -> None:
        self._default: int | None = None
        self._users: dict[Username, int] = {}
        self._lock = threading.Lock()

    def default(self) -> int | None:
        return self._default

    def set_default(self, limit: int) -> None:
        self._default = limit

    def remove_default(self) -> None:
        self._default = None

    def of(self, user: Username) -> int | None:
        with self._lock:
            return self._users.get(user)

    def set(self, user: Username, limit: int) -> None:
        with self._lock:
            self._users[user] = limit

    def remove(self, user: Username) -> None:
        with self._lock:
            self._users.pop(user, None)
