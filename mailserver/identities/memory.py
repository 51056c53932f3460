"""``CustomIdentityStore`` in memory (tests, single-process runs)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable

from mailserver.identities.api import CustomIdentityStore, Identity
from mailserver.model.address import Username


class MemoryCustomIdentityStore(CustomIdentityStore):
    def __init__(self) -> None:
        self._identities: dict[Username, dict[uuid.UUID, Identity]] = {}
        self._lock = threading.Lock()

    def list(self, user: Username) -> list[Identity]:
        with self._lock:   # by id, as Cassandra's clustering order
            return sorted(self._identities.get(user, {}).values(), key=lambda i: i.id.bytes)

    def find(self, user: Username, identity_id: uuid.UUID) -> Identity | None:
        with self._lock:
            return self._identities.get(user, {}).get(identity_id)

    def save(self, user: Username, identity: Identity) -> None:
        with self._lock:
            self._identities.setdefault(user, {})[identity.id] = identity

    def delete(self, user: Username, ids: Iterable[uuid.UUID]) -> None:
        with self._lock:
            for identity_id in ids:
                self._identities.get(user, {}).pop(identity_id, None)
