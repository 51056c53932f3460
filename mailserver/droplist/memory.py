"""In-memory ``DropList`` for unit tests and single-process use."""

from __future__ import annotations

import threading

from mailserver.droplist.api import DropList, DropListEntry, OwnerScope, denied_forms
from mailserver.model.address import MailAddress


class MemoryDropList(DropList):
    def __init__(self) -> None:
        # Keyed as James's table: one row per (scope, owner, denied entity).
        self._entries: dict[tuple[OwnerScope, str, str], DropListEntry] = {}
        self._lock = threading.Lock()

    def add(self, entry: DropListEntry) -> None:
        with self._lock:
            self._entries.setdefault((entry.owner_scope, entry.owner, entry.denied_entity), entry)

    def remove(self, entry: DropListEntry) -> None:
        with self._lock:
            self._entries.pop((entry.owner_scope, entry.owner, entry.denied_entity), None)

    def list(self, scope: OwnerScope, owner: str) -> list[DropListEntry]:
        with self._lock:
            return [e for (s, o, _), e in self._entries.items() if s == scope and o == owner]

    def blocks(self, scope: OwnerScope, owner: str, sender: MailAddress) -> bool:
        forms = denied_forms(sender)
        with self._lock:
            return any(s == scope and (scope == OwnerScope.GLOBAL or o == owner) and d in forms
                       for s, o, d in self._entries)
