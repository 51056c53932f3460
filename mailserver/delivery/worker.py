"""Remote delivery workers: consume the ``outgoing`` queue and deliver over SMTP (James §2.6).

For each mail taken from ``outgoing`` (already one domain per mail, named
``<name>-to-<domain>`` by the RemoteDelivery mailet; recipients of several domains are
nevertheless grouped here by domain):

* MX resolution through the ``Resolver``; SMTP delivery MX by MX (``SmtpDeliverer``);
* SUCCESS for every recipient -> ack;
* permanent failure (5xx, unknown domain once ``max_dns_problem_retries`` is spent) -> bounce:
  the mail goes to the ``bounces`` processor through the spool queue with ``delivery-error``,
  ``delivery-error-code`` and ``is-delivery-permanent-error``; no bounce for a null sender;
* temporary failure (4xx, network, DNS timeout) -> on the first one the state becomes ``error``
  and ``delivery_retry_count`` 0; below ``max_retries`` the count is incremented and the mail
  re-enqueued on ``outgoing`` with the configured delay; above it, bounced ("Too many retries");
* an unexpected exception (or a failing re-enqueue / bounce) -> RETRY: the broker redelivers.

Recipients are handled separately (``sendpartial``): delivered ones are done, the others are
retried or bounced in copies holding only them (same mail name). Delivery is at least once: a
crash between the remote 250 and the ack delivers again.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, TypeVar

from mailserver.delivery.client import AttemptResult, Failure, SmtpDeliverer
from mailserver.delivery.config import DeliveryConfig
from mailserver.delivery.resolver import DomainNotFound, ResolutionError, Resolver, order
from mailserver.model.address import MailAddress
from mailserver.model.mail import (
    DELIVERY_ERROR,
    DELIVERY_ERROR_CODE,
    DELIVERY_RETRY_COUNT,
    ERROR,
    IS_DELIVERY_PERMANENT_ERROR,
    Mail,
)
from mailserver.observability.logging import mdc
from mailserver.queue.api import MailQueue, MailQueueItem, Outcome
from mailserver.queue.content import MimeMessageStore

log = logging.getLogger(__name__)
T = TypeVar("T")


class RemoteDeliveryWorker:
    def __init__(self, outgoing: MailQueue, spool: MailQueue, resolver: Resolver, *,
                 config: DeliveryConfig | None = None, store: MimeMessageStore | None = None,
                 deliverer: SmtpDeliverer | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.outgoing = outgoing
        self.spool = spool
        self.resolver = resolver
        self.config = config or DeliveryConfig()
        self.store = store
        self.deliverer = deliverer or SmtpDeliverer(
            helo_name=self.config.helo_name, connection_timeout=self.config.connection_timeout,
            timeout=self.config.timeout, start_tls=self.config.start_tls)
        self.clock = clock
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._local = threading.local()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, threads: int = 1) -> RemoteDeliveryWorker:
        self._stop.clear()
        for i in range(threads):
            thread = threading.Thread(target=self.run, name=f"remote-delivery-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop taking mails; the ones in flight finish. True when every thread ended in time."""
        self._stop.set()
        self.outgoing.interrupt_waits()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t for t in self._threads if t.is_alive()]
        self._threads = alive
        return not alive

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """Consume ``outgoing`` until ``stop()``; one event loop per thread for the SMTP client."""
        loop = asyncio.new_event_loop()
        self._local.loop = loop
        backoff = 0.1
        try:
            while not self._stop.is_set():
                try:
                    item = self.outgoing.dequeue(timeout=self.config.poll_seconds, keep_consuming=True)
                except Exception:
                    log.exception("dequeue from %s failed; retrying in %.1fs", self.outgoing.name, backoff)
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 30.0)
                    continue
                backoff = 0.1
                if item is not None:
                    self.process(item)
        finally:
            self._local.loop = None
            loop.close()
            try:
                self.outgoing.release()   # a mail pushed to this thread goes back to the queue
            except Exception:
                log.warning("releasing %s failed", self.outgoing.name, exc_info=True)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        loop = getattr(self._local, "loop", None)
        return loop.run_until_complete(coro) if loop is not None else asyncio.run(coro)

    # -- one mail --------------------------------------------------------------------------
    def process(self, item: MailQueueItem) -> Outcome:
        mail = item.mail
        with mdc(mail=mail.name, sender=str(mail.sender) if mail.sender else "<>",
                 recipients=",".join(str(r) for r in mail.recipients)):
            try:
                outcome = self.handle(mail)
            except Exception:
                log.exception("remote delivery of %s failed unexpectedly; it will be redelivered", mail.name)
                outcome = Outcome.RETRY
            try:
                item.done(outcome)
            except Exception:
                log.exception("completing %s with %s failed; the queue will deliver it again", mail.name, outcome)
            return outcome

    def handle(self, mail: Mail) -> Outcome:
        """Attempt delivery; re-enqueue or bounce what failed. Raises when that hand-off fails."""
        content = self._content(mail)
        by_domain: dict[str, list[MailAddress]] = {}
        for rcpt in mail.recipients:
            by_domain.setdefault(rcpt.domain.name, []).append(rcpt)
        delivered: list[str] = []
        permanent: dict[str, Failure] = {}
        temporary: dict[str, Failure] = {}
        for domain, rcpts in by_domain.items():
            result = self._attempt(mail, domain, [str(r) for r in rcpts], content)
            delivered += result.delivered
            permanent.update(result.permanent)
            temporary.update(result.temporary)
        if delivered:
            log.info("mail %s delivered to %s", mail.name, ",".join(delivered))
        if temporary:
            self._temporary_failure(self._subset(mail, temporary), next(iter(temporary.values())))
        if permanent:
            failure = next(iter(permanent.values()))
            log.warning("mail %s permanently failed for %s: %s", mail.name, ",".join(permanent), failure.message)
            self.bounce(self._subset(mail, permanent), failure, permanent=True)
        return Outcome.SUCCESS

    def _attempt(self, mail: Mail, domain: str, rcpts: list[str], content: bytes) -> AttemptResult:
        try:
            hosts = self.resolver.resolve(domain)
        except DomainNotFound as exc:
            retries = int(mail.attributes.get(DELIVERY_RETRY_COUNT, 0))
            permanent = retries >= self.config.max_dns_problem_retries
            return AttemptResult(failed=dict.fromkeys(rcpts, Failure(str(exc), None, permanent=permanent)))
        except ResolutionError as exc:
            return AttemptResult(failed=dict.fromkeys(rcpts, Failure(str(exc))))
        hosts = order(hosts, shuffle=self.config.load_balancing)
        return self._run(self.deliverer.deliver(hosts, str(mail.sender) if mail.sender else None, rcpts, content))

    def _content(self, mail: Mail) -> bytes:
        if not mail.content.stored:
            return mail.content.data or b""
        if self.store is None:
            raise RuntimeError(f"mail {mail.name} content is in the blob store but the worker has no MimeMessageStore")
        return self.store.read(mail.content)

    @staticmethod
    def _subset(mail: Mail, failed: dict[str, Failure]) -> Mail:
        if len(failed) == len(mail.recipients):
            return mail
        return mail.copy_for([r for r in mail.recipients if str(r) in failed], name=mail.name)

    def _temporary_failure(self, mail: Mail, failure: Failure) -> None:
        count = mail.attributes.get(DELIVERY_RETRY_COUNT)
        if count is None:
            mail.state = ERROR
            count = 0
        count = int(count)
        if count < self.config.retries:
            count += 1
            mail.set_attribute(DELIVERY_RETRY_COUNT, count)
            mail.last_updated = self.clock()
            mail.error_message = failure.message
            delay = self.config.delay_for(count)
            self.outgoing.enqueue(mail, delay=delay)
            log.info("mail %s: temporary failure (%s); retry %d/%d in %s", mail.name, failure.message, count,
                     self.config.retries, delay)
            return
        log.warning("mail %s: too many retries (%d), bouncing: %s", mail.name, count, failure.message)
        self.bounce(mail, Failure(f"Too many retries failure. Bouncing after {count} retries. {failure.message}",
                                  failure.code), permanent=False)

    def bounce(self, mail: Mail, failure: Failure, *, permanent: bool) -> None:
        if mail.sender is None:
            log.info("mail %s has a null sender: no bounce (%s)", mail.name, failure.message)
            return
        mail.state = self.config.bounce_processor
        mail.error_message = failure.message
        mail.set_attribute(DELIVERY_ERROR, failure.message)
        if failure.code is not None:
            mail.set_attribute(DELIVERY_ERROR_CODE, failure.code)
        mail.set_attribute(IS_DELIVERY_PERMANENT_ERROR, permanent)
        self.spool.enqueue(mail)
        log.info("mail %s sent to the %s processor", mail.name, self.config.bounce_processor)
