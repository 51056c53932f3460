"""Memory mail queues (unit tests, single process): same behaviour as the distributed queue.

Thread-safe. Delays are honoured against an injectable ``clock`` (epoch seconds); waiting in
``dequeue(timeout)`` uses real time. A taken item is "in flight" until ``done``: RETRY puts it
back at its place, REJECT moves it to ``dead_letters`` (the memory stand-in for the DLQ), and
an item garbage-collected without ``done`` is put back (as RabbitMQ redelivers the unacked
message of a dead consumer). Mails are copied in and out, so callers never share state with
the queue; content is kept as given (inline bytes or blob ids), unless the queue is given the
``contents`` store: then its entries own their blobs as the distributed queue's do (a copy of
stored content unless handed over, deleted once processed or removed).
"""

from __future__ import annotations

import copy
import itertools
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from mailserver.model.address import InvalidAddress, MailAddress
from mailserver.model.mail import Mail
from mailserver.queue.api import (
    MailQueue,
    MailQueueError,
    MailQueueFactory,
    MailQueueItem,
    Outcome,
    QueueItemView,
    RemoveField,
)
from mailserver.queue.content import MimeMessageStore

Clock = Callable[[], float]


@dataclass
class _Entry:
    seq: int
    enqueue_id: str
    mail: Mail
    enqueued: float
    due: float


def _copy(mail: Mail) -> Mail:
    stored = copy.copy(mail)
    stored.attributes = copy.deepcopy(mail.serializable_attributes())
    stored.recipients = list(mail.recipients)
    stored.per_recipient_headers = list(mail.per_recipient_headers)
    return stored


def matches(mail: Mail, field: RemoveField, value: str) -> bool:
    """Whether ``mail`` matches a remove filter (addresses compared normalised when parseable)."""
    field = RemoveField(field)
    if field is RemoveField.NAME:
        return mail.name == value
    try:
        wanted = str(MailAddress.of(value))
    except InvalidAddress:
        wanted = value
    if field is RemoveField.SENDER:
        return mail.sender is not None and str(mail.sender) == wanted
    return any(str(r) == wanted for r in mail.recipients)


class MemoryMailQueueItem(MailQueueItem):
    def __init__(self, queue: MemoryMailQueue, entry: _Entry) -> None:
        self.mail = _copy(entry.mail)
        self.enqueue_id = entry.enqueue_id
        self._queue = queue
        self._seq = entry.seq
        self._done = False
        # Dropped without done(): handed back to the queue (drained at its next operation).
        self._finalizer = weakref.finalize(self, queue._abandoned.append, entry.seq)

    def done(self, outcome: Outcome, *, handed_over: Collection[str] = ()) -> None:
        if self._done:
            raise MailQueueError(f"item {self.enqueue_id} of queue {self._queue.name} is already done")
        outcome = Outcome(outcome)
        self._done = True
        self._finalizer.detach()
        self._queue._complete(self._seq, outcome, frozenset(handed_over))


class MemoryMailQueue(MailQueue):
    def __init__(self, name: str, clock: Clock | None = None, contents: MimeMessageStore | None = None) -> None:
        self.name = name
        self.contents = contents
        self._clock = clock or time.time
        self._cond = threading.Condition()
        self._waiting: dict[int, _Entry] = {}
        self._in_flight: dict[int, _Entry] = {}
        self._removed: set[int] = set()     # in-flight entries removed by an admin: not requeued
        self._abandoned: deque[int] = deque()
        self._seq = itertools.count()
        self._interrupts = 0   # bumped by interrupt_waits: a waiting dequeue seeing it change returns None
        self.dead_letters: list[Mail] = []

    # ------------------------------------------------------------------ port
    def enqueue(self, mail: Mail, delay: timedelta | None = None, *, hand_over: bool = False) -> None:
        now = self._clock()
        seconds = delay.total_seconds() if delay else 0.0
        held = _copy(mail)
        if self.contents is not None and not (hand_over and held.content.stored):
            held.content = self.contents.owned_copy(held.content)
        entry = _Entry(next(self._seq), str(uuid.uuid4()), held, now, now + max(seconds, 0.0))
        with self._cond:
            self._waiting[entry.seq] = entry
            self._cond.notify_all()

    def dequeue(self, timeout: float | None = None, *, keep_consuming: bool = False) -> MemoryMailQueueItem | None:
        del keep_consuming   # nothing is pushed here: a thread holds only what it dequeued
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        with self._cond:
            interrupts = self._interrupts
            while True:
                self._drain_abandoned()
                now = self._clock()
                due = [e for e in self._waiting.values() if e.due <= now]
                if due:
                    entry = min(due, key=lambda e: (e.due, e.seq))
                    del self._waiting[entry.seq]
                    self._in_flight[entry.seq] = entry
                    return MemoryMailQueueItem(self, entry)
                remaining = None if deadline is None else deadline - time.monotonic()
                if (remaining is not None and remaining <= 0) or self._interrupts != interrupts:
                    return None
                # Wake up for a delay falling due (clock may be fake: poll at least every 50 ms).
                wait = 0.05
                if remaining is not None:
                    wait = min(wait, remaining)
                self._cond.wait(wait)

    def interrupt_waits(self) -> None:
        with self._cond:
            self._interrupts += 1
            self._cond.notify_all()

    def browse(self) -> Iterator[QueueItemView]:
        now = self._clock()
        with self._cond:
            self._drain_abandoned()
            entries = sorted([*self._waiting.values(), *(e for s, e in self._in_flight.items()
                                                         if s not in self._removed)],
                             key=lambda e: (e.enqueued, e.seq))
        return iter([QueueItemView(mail=_copy(e.mail), enqueue_id=e.enqueue_id,
                                   enqueued_time=datetime.fromtimestamp(e.enqueued, UTC),
                                   next_delivery=datetime.fromtimestamp(e.due, UTC) if e.due > now else None)
                     for e in entries])

    def size(self) -> int:
        with self._cond:
            self._drain_abandoned()
            return len(self._waiting)

    def remove(self, field: RemoveField, value: str) -> int:
        field = RemoveField(field)
        return self._remove_where(lambda mail: matches(mail, field, value))

    def clear(self) -> int:
        return self._remove_where(lambda mail: True)

    def flush(self) -> int:
        now = self._clock()
        with self._cond:
            delayed = [e for e in self._waiting.values() if e.due > now]
            for e in delayed:
                e.due = now
            self._cond.notify_all()
            return len(delayed)

    def republish_not_processed(self, older_than: datetime) -> int:
        return 0  # nothing is ever lost in memory

    # ------------------------------------------------------------------ internals
    def _remove_where(self, predicate: Callable[[Mail], bool]) -> int:
        with self._cond:
            self._drain_abandoned()
            gone = [s for s, e in self._waiting.items() if predicate(e.mail)]
            for s in gone:
                self._release(self._waiting.pop(s).mail)
            flying = [s for s, e in self._in_flight.items() if s not in self._removed and predicate(e.mail)]
            self._removed.update(flying)
            return len(gone) + len(flying)

    def _release(self, mail: Mail, keep: frozenset[str] = frozenset()) -> None:
        """The entry is gone: its blobs with it (a no-op without ``contents`` or with deduplication)."""
        if self.contents is not None:
            self.contents.delete(mail.content, keep=keep)

    def _complete(self, seq: int, outcome: Outcome, handed_over: frozenset[str] = frozenset()) -> None:
        with self._cond:
            entry = self._in_flight.pop(seq, None)
            removed = seq in self._removed
            self._removed.discard(seq)
            if entry is None:
                return
            if outcome is Outcome.RETRY and not removed:
                self._waiting[seq] = entry
                self._cond.notify_all()
            elif outcome is Outcome.REJECT:
                self.dead_letters.append(_copy(entry.mail))
            else:
                self._release(entry.mail, handed_over)

    def _drain_abandoned(self) -> None:
        """Requeue items garbage-collected without done() (caller holds the lock)."""
        while self._abandoned:
            seq = self._abandoned.popleft()
            entry = self._in_flight.pop(seq, None)
            removed = seq in self._removed
            self._removed.discard(seq)
            if entry is not None and not removed:
                self._waiting[seq] = entry
                self._cond.notify_all()


class MemoryMailQueueFactory(MailQueueFactory):
    def __init__(self, clock: Clock | None = None, contents: MimeMessageStore | None = None) -> None:
        self._clock = clock
        self._contents = contents
        self._queues: dict[str, MemoryMailQueue] = {}
        self._lock = threading.Lock()

    def get(self, name: str) -> MemoryMailQueue:
        if not name:
            raise ValueError("a mail queue name must not be empty")
        with self._lock:
            queue = self._queues.get(name)
            if queue is None:
                queue = self._queues[name] = MemoryMailQueue(name, self._clock, self._contents)
            return queue

    def list_names(self) -> list[str]:
        with self._lock:
            return sorted(self._queues)
