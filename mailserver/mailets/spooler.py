"""The spooler (James's JamesMailSpooler): spool queue -> mailet container, N worker threads.

An item is acknowledged only once the container is done with the mail, so a crash of the
process mid-way leaves it unacknowledged and the broker delivers it again.

When processing raises (a ``propagate`` pair, a storage outage, a processing loop):

1. the recipient list is restored to what it was when the mail was dequeued (and the state
   too if the mail had been ghosted);
2. ``mail-processing-error-count`` is incremented;
3. up to ``max_retries`` failures: the mail is enqueued again on the spool with the new count
   (current state and attributes kept) and the original item acknowledged: a broker-level
   requeue could not carry the count, and the mail would loop for ever;
4. past ``max_retries``: the mail is run through the ``error`` processor with the reason as
   error message (which bounces and stores it in ``var/mail/error``); if even that fails, it
   is stored directly in the spooler error repository;
5. if none of that works (the queue or the repository is down too), the item is rejected, so
   the broker dead-letters it instead of losing it; except when a stored message already took
   part of the entry's content (``blob_handover``): a dead letter would then point at a blob
   that message deletes with it, so the item goes back to the spool instead, after a pause
   (``give_back_pause``). Delivery is exactly-once per recipient: the recipients served
   already are skipped when it comes again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import traceback

from mailserver.mailets import blob_handover
from mailserver.mailets.container import MailetContainer
from mailserver.model.mail import ERROR, GHOST, PROCESSING_ERROR_COUNT, Mail
from mailserver.observability.logging import mdc
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueue, MailQueueItem, Outcome
from mailserver.repository.api import MailRepository

LOG = logging.getLogger("mailserver.mailets.spooler")
MAX_RETRIES = 5  # James's hard-coded limit
# Seconds a worker waits for a mail before rechecking its stop flag; stop() interrupts the wait, so
# this only sets how often an idle worker wakes (20 of them at 0.5 s cost 2 % of a core).
POLL_TIMEOUT = 5.0


def _error_count(mail: Mail) -> int:
    try:
        return int(mail.attributes.get(PROCESSING_ERROR_COUNT, 0))
    except (TypeError, ValueError):
        return 0


class MailSpooler:
    def __init__(self, container: MailetContainer, queue: MailQueue, error_repository: MailRepository, *,
                 threads: int = 20, max_retries: int = MAX_RETRIES, poll_timeout: float = POLL_TIMEOUT,
                 metrics: Metrics | None = None, give_back_pause: float = 1.0) -> None:
        if threads < 0:
            raise ValueError("threads must not be negative (0 disables the spooler)")
        self.container = container
        self.queue = queue
        self.error_repository = error_repository
        self.threads = threads
        self.max_retries = max_retries
        self.poll_timeout = poll_timeout
        self.metrics = metrics
        self.give_back_pause = give_back_pause
        self._stop = threading.Event()
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()
        self.in_flight = 0
        self.processed = 0

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> None:
        if self._workers:
            raise RuntimeError("spooler already started")
        self._stop.clear()
        for i in range(self.threads):
            worker = threading.Thread(target=self._run, name=f"spooler-{i}", daemon=True)
            worker.start()
            self._workers.append(worker)
        LOG.info("spooler started with %d thread(s) on queue %s", self.threads, self.queue.name)

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop taking mails and wait for the ones in progress; True when every worker ended."""
        self._stop.set()
        self.queue.interrupt_waits()
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        alive = [w.name for w in self._workers if w.is_alive()]
        if alive:
            LOG.warning("spooler workers still busy after %.0fs: %s", timeout, ", ".join(alive))
        self._workers = [w for w in self._workers if w.is_alive()]
        return not alive

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    item = self.queue.dequeue(timeout=self.poll_timeout, keep_consuming=True)
                except Exception:
                    LOG.exception("dequeue from %s failed; retrying in 1s", self.queue.name)
                    self._stop.wait(1.0)
                    continue
                if item is not None:
                    try:
                        self.process(item)
                    except Exception:
                        # done() itself failed (broker gone): the unacknowledged item is redelivered.
                        LOG.exception("could not settle %s on %s", item.mail.name, self.queue.name)
        finally:
            self._release()

    def _release(self) -> None:
        try:
            self.queue.release()
        except Exception:  # the connection is gone: the broker took its mails back already
            LOG.warning("releasing %s failed", self.queue.name, exc_info=True)

    # -- one mail ---------------------------------------------------------------------------------
    def process(self, item: MailQueueItem) -> Outcome:
        """Run the container on one dequeued item and settle the item; returns the outcome given."""
        mail = item.mail
        recipients, state = list(mail.recipients), mail.state
        with self._lock:
            self.in_flight += 1
        try:
            timer = self.metrics.timed("spoolProcessing") if self.metrics else contextlib.nullcontext()
            with timer, mdc(protocol="MAILET", action="SPOOL", mail=mail.name, queue=self.queue.name), \
                    blob_handover.processing() as entry_blobs:
                handed_over = entry_blobs.claimed
                try:
                    self.container.service(mail)
                    outcome = Outcome.SUCCESS
                except Exception as exc:
                    mail.recipients = recipients
                    if mail.state == GHOST:
                        # Ghosted before a split copy of it failed: a ghost would be dropped at
                        # once when dequeued again, so it restarts where it started instead.
                        mail.state = state
                    outcome = self._failed(mail, exc)   # a retry copies the content first: nothing lost
                    if outcome is Outcome.REJECT:
                        outcome = self._give_back(mail) if handed_over else self._reject(mail)
                try:
                    # Blobs a stored message took over stay when the entry deletes its content.
                    item.done(outcome, handed_over=frozenset(handed_over))
                finally:
                    self._delete_created(entry_blobs.created - handed_over)
                return outcome
        finally:
            with self._lock:
                self.in_flight -= 1
                self.processed += 1

    def _delete_created(self, blob_ids: set[str]) -> None:
        """Blobs mailets wrote for the mail (a rewritten header): whatever the outcome, nobody else refers
        to them (a requeued or stored mail got copies; a redelivered entry has its original content)."""
        blobs = self.container.context.contents.blobs
        for blob_id in blob_ids:
            try:
                blobs.delete(blobs.default_bucket, blob_id)
            except Exception:
                LOG.warning("could not delete blob %s written while processing", blob_id, exc_info=True)

    def _failed(self, mail: Mail, exc: Exception) -> Outcome:
        count = _error_count(mail) + 1
        LOG.error("processing of %s failed (attempt %d of %d): %s", mail.name, count, self.max_retries + 1, exc,
                  exc_info=exc)
        try:
            mail.set_attribute(PROCESSING_ERROR_COUNT, count)
            if count <= self.max_retries:
                self.queue.enqueue(mail)
            else:
                self._give_up(mail, exc)
            return Outcome.SUCCESS
        except Exception:
            LOG.exception("could not requeue nor store %s", mail.name)
            return Outcome.REJECT

    @staticmethod
    def _reject(mail: Mail) -> Outcome:
        LOG.error("%s rejected: the broker keeps it as a dead letter", mail.name)
        return Outcome.REJECT

    def _give_back(self, mail: Mail) -> Outcome:
        """The entry returns to the spool as it was dequeued: a stored message owns part of its content."""
        LOG.error("%s shares content with a message stored already: given back to %s, not dead-lettered",
                  mail.name, self.queue.name)
        if self.metrics:
            self.metrics.meter("spoolGivenBack", "Spool entries given back instead of dead-lettered").inc()
        self._stop.wait(self.give_back_pause)   # requeueing failed: storage or broker is down, do not spin
        return Outcome.RETRY

    def _give_up(self, mail: Mail, exc: Exception) -> None:
        reason = "".join(traceback.format_exception(exc))
        mail.error_message = f"Processing failed after {self.max_retries + 1} attempts: {exc}\n{reason}"
        mail.state = ERROR
        try:
            self.container.service(mail)
        except Exception:
            LOG.exception("the error processor failed on %s: storing it in %s", mail.name, self.error_repository.url)
            self.error_repository.store(mail)


def spooler_for(container: MailetContainer, *, poll_timeout: float = POLL_TIMEOUT,
                metrics: Metrics | None = None) -> MailSpooler:
    """A spooler configured by the ``spooler`` section of the container's configuration."""
    spec = container.spec.spooler if container.spec else None
    context = container.context
    return MailSpooler(container, context.spool,
                       context.repositories.select(spec.error_repository if spec else "cassandra://var/mail/error/"),
                       threads=spec.threads if spec else 20, max_retries=spec.max_retries if spec else MAX_RETRIES,
                       poll_timeout=poll_timeout, metrics=metrics)
