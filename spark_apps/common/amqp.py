"""Confirmed publishing to RabbitMQ from the Spark driver or executors, with the server's own publisher.

One ``ConfirmingPublisher`` (``mailserver.events.publisher``: persistent, ``text/plain``, publisher
confirms, a dead connection replaced once) per Python worker process and per broker URL, created on
first use and reused by every partition that process runs, as ``cql.CqlEndpoint`` does for Cassandra.
It lives in an importable module, not in a job file: a job file is ``__main__``, whose globals Spark
pickles by value (a lock cannot be pickled).
"""

from __future__ import annotations

import atexit
import threading
from typing import Any

_LOCK = threading.Lock()
_PUBLISHERS: dict[str, Any] = {}


def publisher(amqp_url: str, connections: int = 2) -> Any:
    """The process's ``ConfirmingPublisher`` for ``amqp_url`` (connections opened lazily)."""
    from mailserver.events.publisher import ConfirmingPublisher

    with _LOCK:
        found = _PUBLISHERS.get(amqp_url)
        if found is None:
            found = _PUBLISHERS[amqp_url] = ConfirmingPublisher(amqp_url, connections=connections)
            atexit.register(found.close)
    return found
