"""James's mail-queue metrics around any ``MailQueue``: a decorator, so adapters stay unaware.

``enqueuedMail:Q`` and ``dequeuedMail:Q`` (meters), ``enqueueTime:Q`` (timer) and
``mailQueueSize:Q`` (gauge, read at scrape time; the queue's ``size`` is cheap by contract).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import datetime, timedelta

from mailserver.model.mail import Mail
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueue, MailQueueFactory, MailQueueItem, QueueItemView, RemoveField

log = logging.getLogger(__name__)


class MeteredMailQueue(MailQueue):
    def __init__(self, inner: MailQueue, metrics: Metrics) -> None:
        self.inner = inner
        self.name = inner.name
        self.metrics = metrics
        self._enqueued = metrics.meter(f"enqueuedMail:{self.name}", f"Mails enqueued on {self.name}")
        self._dequeued = metrics.meter(f"dequeuedMail:{self.name}", f"Mails dequeued from {self.name}")
        metrics.gauge(f"mailQueueSize:{self.name}", self._size, f"Mails waiting in {self.name}")

    def _size(self) -> float:
        try:
            return float(self.inner.size())
        except Exception:  # a scrape must not fail because the broker is away
            log.debug("size of %s unavailable", self.name, exc_info=True)
            return float("nan")

    def enqueue(self, mail: Mail, delay: timedelta | None = None, *, hand_over: bool = False) -> None:
        with self.metrics.timed(f"enqueueTime:{self.name}"):
            self.inner.enqueue(mail, delay, hand_over=hand_over)
        self._enqueued.inc()

    def dequeue(self, timeout: float | None = None, *, keep_consuming: bool = False) -> MailQueueItem | None:
        item = self.inner.dequeue(timeout, keep_consuming=keep_consuming)
        if item is not None:
            self._dequeued.inc()
        return item

    def browse(self) -> Iterator[QueueItemView]:
        return self.inner.browse()

    def size(self) -> int:
        return self.inner.size()

    def remove(self, field: RemoveField, value: str) -> int:
        return self.inner.remove(field, value)

    def clear(self) -> int:
        return self.inner.clear()

    def flush(self) -> int:
        return self.inner.flush()

    def republish_not_processed(self, older_than: datetime) -> int:
        return self.inner.republish_not_processed(older_than)

    def update_browse_start(self) -> datetime | None:
        return self.inner.update_browse_start()

    def close(self) -> None:
        self.inner.close()

    def interrupt_waits(self) -> None:
        self.inner.interrupt_waits()

    def release(self) -> None:
        self.inner.release()


class MeteredMailQueueFactory(MailQueueFactory):
    def __init__(self, inner: MailQueueFactory, metrics: Metrics) -> None:
        self.inner = inner
        self.metrics = metrics
        self._queues: dict[str, MeteredMailQueue] = {}

    def get(self, name: str) -> MailQueue:
        queue = self._queues.get(name)
        if queue is None:
            queue = self._queues.setdefault(name, MeteredMailQueue(self.inner.get(name), self.metrics))
        return queue

    def list_names(self) -> list[str]:
        return self.inner.list_names()

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            close()
