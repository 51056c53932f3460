"""Group commit: work that threads submit at the same time, done in one batch by one of them.

Why: some writes cost a round trip (or a Paxos round) each, while one request can carry many of
them: the search index's bulk request, a counter's compare-and-set that can reserve a range as
cheaply as one value. Under load, callers that would each wait for their own request share one.

How (as a database's log writer does it): a caller that finds no batch in progress runs one
with its own item and everything queued behind it, up to ``max_weight``; callers arriving
meanwhile queue theirs and wait. When the caller running batches has had its own item done it
returns, and the first caller still waiting takes its turn to run the next batch, so nobody
works for the others for long. Alone, a caller runs its item at once: no waiting, no timer.

Every caller returns only once its own item is done, with its own result, or raises the
exception that failed the batch carrying it (the same exception object in each caller, as
``concurrent.futures`` does; an interrupt is raised only in the thread it hit, the others get
``BatchInterrupted``). The turn passes on whatever the batch raised: a caller left waiting would
wait forever.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class _Turn(Generic[T, R]):
    __slots__ = ("done", "error", "item", "result", "woken")

    def __init__(self, item: T) -> None:
        self.item = item
        self.woken = threading.Event()
        self.done = False              # False when woken: this caller runs the next batch
        self.result: R | None = None
        self.error: BaseException | None = None


class GroupCommit(Generic[T, R]):
    """``run_batch(items)`` returns one result per item, in order; it runs in a caller's thread."""

    def __init__(self, run_batch: Callable[[list[T]], Sequence[R]], *, max_weight: int,
                 weight: Callable[[T], int] = lambda _item: 1) -> None:
        if max_weight < 1:
            raise ValueError("max_weight must be at least 1")
        self._run_batch = run_batch
        self._weight = weight
        self.max_weight = max_weight
        self._lock = threading.Lock()
        self._waiting: deque[_Turn[T, R]] = deque()
        self._running = False          # invariant: not running => nobody waiting
        self.batches = 0               # batches run: what the grouping saves (tests, metrics)

    @property
    def waiting(self) -> int:
        """Callers queued for a batch, not yet taken into one."""
        with self._lock:
            return len(self._waiting)

    def submit(self, item: T) -> R:
        turn: _Turn[T, R] = _Turn(item)
        with self._lock:
            self._waiting.append(turn)
            leads = not self._running
            self._running = True
        if not leads:
            turn.woken.wait()
        if not turn.done:
            self._run_batches_until(turn)
        if turn.error is not None:
            raise turn.error
        return turn.result  # type: ignore[return-value]   # set with done, error None

    def _run_batches_until(self, own: _Turn[T, R]) -> None:
        try:
            while not own.done:
                batch = self._next_batch()
                results: Sequence[R] = ()
                error: BaseException | None = None
                try:
                    self.batches += 1
                    results = self._run_batch([turn.item for turn in batch])
                    if len(results) != len(batch):
                        raise RuntimeError(f"a batch of {len(batch)} items gave {len(results)} results")
                except BaseException as exc:   # every caller in the batch gets it
                    error = exc
                for i, turn in enumerate(batch):
                    turn.result = results[i] if error is None else None
                    turn.error = error if turn is own else _for_another_thread(error)
                    turn.done = True
                    if turn is not own:
                        turn.woken.set()
        finally:
            with self._lock:
                if self._waiting:
                    self._waiting[0].woken.set()   # not done: it runs the next batch
                else:
                    self._running = False

    def _next_batch(self) -> list[_Turn[T, R]]:
        with self._lock:
            batch = [self._waiting.popleft()]
            total = self._weight(batch[0].item)
            while self._waiting and total + self._weight(self._waiting[0].item) <= self.max_weight:
                turn = self._waiting.popleft()
                batch.append(turn)
                total += self._weight(turn.item)
            return batch


class BatchInterrupted(RuntimeError):
    """The batch carrying this caller's item was interrupted in the thread running it."""


def _for_another_thread(error: BaseException | None) -> BaseException | None:
    # An interrupt (KeyboardInterrupt, SystemExit) stays in the thread it hit; the other callers
    # of its batch get an ordinary error.
    if error is None or isinstance(error, Exception):
        return error
    failure = BatchInterrupted(f"the batch was interrupted: {error!r}")
    failure.__cause__ = error
    return failure
