"""A consumer's connection, opened again whenever it is lost, until the consumer stops."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

# Waits between reconnection attempts: quick at first (a broker restart), then every 10 s.
RECONNECT_DELAYS = (0.5, 1, 2, 5, 10)


def consume_until_stopped(consume: Callable[[], None], stopping: threading.Event, log: logging.Logger, what: str,
                          lost: tuple[type[BaseException], ...] = (Exception,)) -> None:
    """Call ``consume`` (which returns or raises when its connection ends) again after each ``lost``
    error, waiting ``RECONNECT_DELAYS`` (reset by a connection that worked), until ``stopping`` is set."""
    attempt = 0
    while not stopping.is_set():
        try:
            consume()
            attempt = 0
        except lost as exc:
            delay = RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]
            attempt += 1
            log.warning("%s lost RabbitMQ (%s); reconnecting in %.1fs", what, exc, delay)
            stopping.wait(delay)
