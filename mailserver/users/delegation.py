"""Delegation: the users a base user lets act as him (James's ``DelegationStore``).

Each side is kept: the base user's ``authorized_users`` and, on the delegate's row,
``delegated_users`` (who delegated to him). As in James, the delegate's side is written only when
the delegate is a user, and removal clears both sides.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable

from mailserver.model.address import Username

UserExists = Callable[[Username], bool]


class DelegationStore(ABC):
    @abstractmethod
    def authorized_users(self, base: Username) -> list[Username]:
        """Who may act as ``base``."""

    @abstractmethod
    def delegated_users(self, delegate: Username) -> list[Username]:
        """Whose accounts ``delegate`` may act as."""

    @abstractmethod
    def add_authorized_user(self, base: Username, delegate: Username) -> None: ...

    @abstractmethod
    def remove_authorized_user(self, base: Username, delegate: Username) -> None: ...

    @abstractmethod
    def clear(self, base: Username) -> None:
        """Remove every delegate of ``base``."""


class MemoryDelegationStore(DelegationStore):
    def __init__(self, exists: UserExists) -> None:
        self._exists = exists
        self._authorized: dict[Username, set[Username]] = {}
        self._delegated: dict[Username, set[Username]] = {}
        self._lock = threading.Lock()

    def authorized_users(self, base: Username) -> list[Username]:
        with self._lock:
            return sorted(self._authorized.get(base, ()), key=lambda u: u.value)

    def delegated_users(self, delegate: Username) -> list[Username]:
        with self._lock:
            return sorted(self._delegated.get(delegate, ()), key=lambda u: u.value)

    def add_authorized_user(self, base: Username, delegate: Username) -> None:
        delegate_exists = self._exists(delegate)
        with self._lock:
            self._authorized.setdefault(base, set()).add(delegate)
            if delegate_exists:
                self._delegated.setdefault(delegate, set()).add(base)

    def remove_authorized_user(self, base: Username, delegate: Username) -> None:
        with self._lock:
            self._authorized.get(base, set()).discard(delegate)
            self._delegated.get(delegate, set()).discard(base)

    def clear(self, base: Username) -> None:
        with self._lock:
            for delegate in self._authorized.pop(base, set()):
                self._delegated.get(delegate, set()).discard(base)
