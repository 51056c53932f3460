"""The change-log port (James's ``MailboxChangeRepository`` / ``EmailChangeRepository``) and its
memory adapter.

``since`` reads the changes after a state, in state order, folded by ``Collector``; it reads no
more than the answer needs (pages of ``limit + 1`` changes, stopping as soon as the answer is
full). A state is known when some change at or after it is still kept (James's Cassandra
semantics: a state whose own row expired still has its later changes); else it cannot be
calculated. ``INITIAL`` means from the first change kept. Changes written for sharees
(``is_delegated``) are skipped unless ``with_delegation``.
"""

from __future__ import annotations

import threading
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator

from mailserver.jmap.changes.model import (
    DEFAULT_LIMIT,
    INITIAL,
    Change,
    Changes,
    Collector,
    order_key,
    state_not_found,
)

MAILBOX_CHANGE = "mailbox_change"
EMAIL_CHANGE = "email_change"


class ChangeRepository(ABC):
    def __init__(self, table: str, default_limit: int = DEFAULT_LIMIT) -> None:
        if table not in (MAILBOX_CHANGE, EMAIL_CHANGE):
            raise ValueError(f"no change table {table!r}")
        self.table, self.default_limit = table, default_limit

    @property
    def of_mailboxes(self) -> bool:
        return self.table == MAILBOX_CHANGE

    @abstractmethod
    def save(self, change: Change) -> None: ...

    @abstractmethod
    def _page(self, account_id: str, after: uuid.UUID | None, inclusive: bool, size: int) -> list[Change]:
        """Up to ``size`` changes of the account in state order, from ``after`` (all when None)."""

    @abstractmethod
    def latest_state(self, account_id: str, *, with_delegation: bool = False) -> uuid.UUID:
        """The newest change's state, ``INITIAL`` when there is none."""

    def since(self, account_id: str, state: uuid.UUID, limit: int | None = None, *,
              with_delegation: bool = False) -> Changes:
        limit = self.default_limit if limit is None else limit
        if limit <= 0:
            raise ValueError("maxChanges must be a positive integer")
        if state != INITIAL and state.version != 1:   # never written, and no timeuuid to compare
            raise state_not_found(state)
        collector = Collector(state, limit, mailboxes=self.of_mailboxes)
        pages = self._changes(account_id, None if state == INITIAL else state, limit + 1)
        first = next(pages, None)
        if first is None and state != INITIAL:
            raise state_not_found(state)
        for change in ([first] if first is not None else []):
            self._fold(collector, change, state, with_delegation)
        for change in pages:
            if collector.full:
                break
            self._fold(collector, change, state, with_delegation)
        return collector.result()

    @staticmethod
    def _fold(collector: Collector, change: Change, since: uuid.UUID, with_delegation: bool) -> None:
        if change.state != since and (with_delegation or not change.is_delegated):
            collector.add(change)

    def _changes(self, account_id: str, start: uuid.UUID | None, size: int) -> Iterator[Change]:
        page = self._page(account_id, start, True, size)
        while page:
            yield from page
            if len(page) < size:
                return
            page = self._page(account_id, page[-1].state, False, size)


class MemoryChangeRepository(ChangeRepository):
    def __init__(self, table: str, default_limit: int = DEFAULT_LIMIT) -> None:
        super().__init__(table, default_limit)
        self._lock = threading.Lock()
        self._changes_of: dict[str, list[Change]] = {}

    def save(self, change: Change) -> None:
        if self.of_mailboxes is False and change.is_count_change:
            raise ValueError("email changes have no count changes")
        with self._lock:
            changes = self._changes_of.setdefault(change.account_id, [])
            changes[:] = sorted([c for c in changes if c.state != change.state] + [change],
                                key=lambda c: order_key(c.state))

    def _page(self, account_id: str, after: uuid.UUID | None, inclusive: bool, size: int) -> list[Change]:
        with self._lock:
            changes = list(self._changes_of.get(account_id, ()))
        if after is not None:
            key = order_key(after)
            changes = [c for c in changes if order_key(c.state) > key or (inclusive and order_key(c.state) == key)]
        return changes[:size]

    def latest_state(self, account_id: str, *, with_delegation: bool = False) -> uuid.UUID:
        with self._lock:
            changes = [c for c in self._changes_of.get(account_id, ()) if with_delegation or not c.is_delegated]
        return changes[-1].state if changes else INITIAL
