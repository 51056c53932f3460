"""How many calls entered a mail queue's ``dequeue``: what a test waits on before ending idle waits.

A stop that must not wait out an hour-long dequeue is only tested once the consumers are in that
dequeue; counting the calls as they enter says when they are, where a sleep only hopes so.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest


def dequeues_entered(monkeypatch: pytest.MonkeyPatch, queue: Any) -> Callable[[], int]:
    """Counts every call entering ``queue.dequeue`` from now on (the queue is otherwise unchanged).

    A call is counted as it enters, a few instructions before it notes the interrupt count it waits
    against: a waiter counted is one that ``interrupt_waits`` reaches.
    """
    entered = 0
    lock = threading.Lock()
    dequeue = queue.dequeue

    def counted(*args: Any, **kwargs: Any) -> Any:
        nonlocal entered
        with lock:
            entered += 1
        return dequeue(*args, **kwargs)

    monkeypatch.setattr(queue, "dequeue", counted)
    return lambda: entered
