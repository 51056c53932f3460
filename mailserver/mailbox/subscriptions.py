"""Mailbox subscriptions (IMAP's SUBSCRIBE, UNSUBSCRIBE, LSUB): James's SubscriptionManager on its
``subscription`` table (partition ``user``, clustering ``mailbox``: the mailbox *name*, as James
stores it, so a subscription outlives the mailbox, as RFC 3501 §6.3.6 wants).

A mailbox service rather than a part of the IMAP server: the vault's restore and the admin tasks
subscribe users too, and they stand below the protocols (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod

from mailserver.cassandra.session import CassandraSession
from mailserver.model.address import Username


class SubscriptionStore(ABC):
    @abstractmethod
    def subscribe(self, user: Username, mailbox: str) -> None: ...

    @abstractmethod
    def unsubscribe(self, user: Username, mailbox: str) -> None: ...

    @abstractmethod
    def subscriptions(self, user: Username) -> list[str]: ...


class MemorySubscriptionStore(SubscriptionStore):
    def __init__(self) -> None:
        self._rows: dict[Username, set[str]] = {}
        self._lock = threading.Lock()

    def subscribe(self, user: Username, mailbox: str) -> None:
        with self._lock:
            self._rows.setdefault(user, set()).add(mailbox)

    def unsubscribe(self, user: Username, mailbox: str) -> None:
        with self._lock:
            self._rows.get(user, set()).discard(mailbox)

    def subscriptions(self, user: Username) -> list[str]:
        with self._lock:
            return sorted(self._rows.get(user, set()))


class CassandraSubscriptionStore(SubscriptionStore):
    def __init__(self, session: CassandraSession) -> None:
        self.s = session

    def subscribe(self, user: Username, mailbox: str) -> None:
        self.s.execute("INSERT INTO subscription (user, mailbox) VALUES (?, ?)", (user.value, mailbox))

    def unsubscribe(self, user: Username, mailbox: str) -> None:
        self.s.execute("DELETE FROM subscription WHERE user = ? AND mailbox = ?", (user.value, mailbox))

    def subscriptions(self, user: Username) -> list[str]:
        return [r["mailbox"] for r in self.s.execute("SELECT mailbox FROM subscription WHERE user = ?",
                                                      (user.value,))]
