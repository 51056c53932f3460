"""``MailQueueSize``: each mail queue with a configured limit against that limit (ours; James has none).

The spool's limit is SMTP's back-pressure threshold (``MAILSERVER_SMTP_SPOOL_LIMIT``): at that
many mails SMTP answers ``452 4.3.1`` at MAIL FROM, so the check turns degraded at the same
count -- the server still works, but it refuses new mail. Other queues (``outgoing`` ...) get
limits of their own (``MAILSERVER_QUEUE_SIZE_LIMITS``); they only alert.

The size read is the queue port's ``size()``: broker counts, cheap by contract, never a browse
of the Cassandra view (James's ``getSize`` is a browse, which is why its size gauge is off by
default). A size that cannot be read is unhealthy, naming the queue.

It lives with the queues, not in ``observability``: observability is a lower layer that knows no
queue; its health registry takes this check from whoever assembles the server.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from mailserver.observability.checks import MAIL_QUEUE_SIZE
from mailserver.observability.health import HealthCheck, Result
from mailserver.queue.api import MailQueueFactory

log = logging.getLogger(__name__)


class MailQueueSizeHealthCheck(HealthCheck):
    name = MAIL_QUEUE_SIZE

    def __init__(self, queues: MailQueueFactory, limits: Mapping[str, int]) -> None:
        if any(limit < 0 for limit in limits.values()):
            raise ValueError("mail queue size limits must not be negative")
        self.queues = queues
        self.limits = dict(limits)

    def check(self) -> Result:
        full, unreadable = [], []
        for name, limit in self.limits.items():
            try:
                size = self.queues.get(name).size()
            except Exception as exc:
                log.warning("cannot read the size of mail queue %s", name, exc_info=True)
                unreadable.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            if size >= limit:
                full.append(f"{name} holds {size} mails (limit {limit})")
        if unreadable:
            return self.unhealthy("cannot read the size of mail queue " + "; ".join(unreadable))
        if full:
            return self.degraded("; ".join(full))
        return self.healthy()
