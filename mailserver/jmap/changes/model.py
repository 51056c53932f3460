"""A change of a user's mailboxes or emails, its state, and folding changes into a ``/changes`` answer.

States are time-based UUIDs, as James's ``CassandraStateFactory``: they order the log in Cassandra
(a ``timeuuid`` clustering column) and are comparable across nodes. ``INITIAL`` is James's fixed
state of an account without changes.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from mailserver import randomness

INITIAL = uuid.UUID("2c9f1b12-b35a-43e6-9af2-0106fb53a943")
DEFAULT_LIMIT = 256   # James's mailboxChangeDefaultLimit and emailChangeDefaultLimit
# 100-ns intervals between the UUID epoch (1582-10-15) and the Unix epoch.
_UUID_EPOCH_OFFSET = 0x01B21DD213814000


class CannotCalculateChanges(Exception):
    """Answered as ``cannotCalculateChanges``, with James's descriptions."""


def state_not_found(state: uuid.UUID) -> CannotCalculateChanges:
    return CannotCalculateChanges(f"State '{state}' could not be found")


class _TimeStates:
    """Version-1 UUIDs whose timestamps never go back within this process (as the Java driver's
    ``Uuids.timeBased``), with a random node and clock sequence so that nodes do not collide."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self) -> uuid.UUID:
        with self._lock:
            now = time.time_ns() // 100 + _UUID_EPOCH_OFFSET
            self._last = max(now, self._last + 1)
            stamp = self._last
        node = int.from_bytes(randomness.token_bytes(6)) | 0x010000000000   # multicast bit: not a MAC
        clock_seq = int.from_bytes(randomness.token_bytes(2)) & 0x3FFF
        return uuid.UUID(fields=(stamp & 0xFFFFFFFF, (stamp >> 32) & 0xFFFF, ((stamp >> 48) & 0x0FFF) | 0x1000,
                                 (clock_seq >> 8) | 0x80, clock_seq & 0xFF, node))


_STATES = _TimeStates()


def new_state() -> uuid.UUID:
    return _STATES.next()


def order_key(state: uuid.UUID) -> tuple[int, bytes]:
    """Cassandra's ``timeuuid`` order: the timestamp, then the remaining bytes."""
    return state.time, state.bytes[8:]


@dataclass(frozen=True)
class Change:
    """One row of ``mailbox_change`` or ``email_change``. ``account_id`` is the username (James's
    ``AccountId.fromUsername``), not the JMAP account id; ``is_delegated`` marks a change written
    for a sharee; ``is_count_change`` (mailboxes only) a change of counts alone."""

    account_id: str
    created: tuple[uuid.UUID, ...] = ()
    updated: tuple[uuid.UUID, ...] = ()
    destroyed: tuple[uuid.UUID, ...] = ()
    is_delegated: bool = False
    is_count_change: bool = False
    state: uuid.UUID = field(default_factory=new_state)
    date: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def is_noop(self) -> bool:
        return not (self.created or self.updated or self.destroyed)


@dataclass(frozen=True)
class Changes:
    """What ``/changes`` answers: the state reached, and the ids changed since the asked state."""

    new_state: uuid.UUID
    has_more_changes: bool
    created: tuple[uuid.UUID, ...]
    updated: tuple[uuid.UUID, ...]
    destroyed: tuple[uuid.UUID, ...]
    count_changes_only: bool = False


class Collector:
    """James's ``MailboxChangesBuilder`` / ``EmailChanges.Builder``: folds changes in state order until
    one more would put more than ``limit`` ids in the answer. An id created then destroyed since the
    asked state is in neither list; an id created and then updated is only created."""

    def __init__(self, since: uuid.UUID, limit: int, *, mailboxes: bool) -> None:
        self.state, self.limit, self.mailboxes = since, limit, mailboxes
        self.created: dict[uuid.UUID, None] = {}
        self.updated: dict[uuid.UUID, None] = {}
        self.destroyed: dict[uuid.UUID, None] = {}
        self.has_more = False
        self.count_only = False

    @property
    def full(self) -> bool:
        return self.has_more

    def add(self, change: Change) -> None:
        if self.has_more:
            return
        gone = set(change.destroyed)
        created = {i: None for i in [*self.created, *change.created] if i not in gone}
        # Mailbox changes never report as updated what they report as created; email changes may.
        new_updates = [i for i in change.updated if not (self.mailboxes and i in created)]
        updated = {i: None for i in [*self.updated, *new_updates] if i not in gone}
        destroyed = {**self.destroyed, **{i: None for i in change.destroyed if i not in self.created}}
        if len(created) + len(updated) + len(destroyed) > self.limit:
            self.has_more = True
            return
        if self.mailboxes:
            nothing_yet = not (self.created or self.updated or self.destroyed)
            self.count_only = change.is_count_change if nothing_yet else self.count_only and change.is_count_change
        self.state, self.created, self.updated, self.destroyed = change.state, created, updated, destroyed

    def result(self) -> Changes:
        if self.has_more and not (self.created or self.updated or self.destroyed):
            raise CannotCalculateChanges(f"Current change collector limit {self.limit} is exceeded by a single "
                                         "change, hence we cannot calculate changes.")
        return Changes(self.state, self.has_more, tuple(self.created), tuple(self.updated), tuple(self.destroyed),
                       self.count_only)
