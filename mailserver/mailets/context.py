"""The ``MailetContext``: what matchers and mailets may use of the rest of the server.

Mailets get their collaborators here rather than importing adapters, so the same chain runs
on memory adapters in unit tests and on Cassandra + S3 in production.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import MutableMapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from mailserver.domains.api import DomainList
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Domain, InvalidAddress, MailAddress, Username
from mailserver.model.mail import ROOT, SENT_BY_MAILET, Mail
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import OUTGOING, SPOOL, MailQueue, MailQueueFactory
from mailserver.queue.content import MimeMessageStore
from mailserver.repository.api import MailRepositoryStore
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.users.api import UsersRepository

LOG = logging.getLogger("mailserver.mailets")


class MailLogger(logging.LoggerAdapter):
    """Every line carries the mail name (and state), as James's MDC ``mail`` / ``state`` fields."""

    def process(self, msg: Any, kwargs: MutableMapping[str, Any]) -> tuple[Any, MutableMapping[str, Any]]:
        extra = self.extra or {}
        kwargs.setdefault("extra", {}).update(extra)
        return f"[mail={extra.get('mail')} state={extra.get('state')}] {msg}", kwargs


@dataclass
class MailetContext:
    domains: DomainList
    users: UsersRepository
    rewriter: RecipientRewriter
    mailboxes: MailboxManager
    repositories: MailRepositoryStore
    queues: MailQueueFactory
    contents: MimeMessageStore
    postmaster: MailAddress
    spool_name: str = SPOOL
    hostname: str = "localhost"
    logger: logging.Logger = field(default=LOG)
    # MetricsMailet meters (James's ``mailetContainerErrors`` ...): counted here, and exported
    # through ``metrics`` when the process has a registry (with per mailet / matcher timers).
    counters: Counter[str] = field(default_factory=Counter)
    metrics: Metrics | None = None

    def count(self, meter: str) -> None:
        self.counters[meter] += 1
        if self.metrics is not None:
            self.metrics.meter(meter).inc()

    def timed(self, name: str) -> AbstractContextManager[None]:
        return self.metrics.timed(name) if self.metrics is not None else nullcontext()

    # -- local or not -------------------------------------------------------------------------
    def is_local_server(self, domain: Domain) -> bool:
        return self.domains.contains(domain)

    def username_of(self, address: MailAddress) -> Username:
        """The account an address belongs to (``local@domain`` with virtual hosting)."""
        if self.users.virtual_hosting:
            return Username.of(str(address))
        return Username.of(address.local_part)

    def is_local_user(self, address: MailAddress) -> bool:
        """James's ``isLocalEmail``: a local domain and an existing account."""
        if not self.is_local_server(address.domain):
            return False
        try:
            return self.users.contains(self.username_of(address))
        except InvalidAddress:
            return False

    # -- queues -------------------------------------------------------------------------------
    @property
    def spool(self) -> MailQueue:
        return self.queues.get(self.spool_name)

    def outgoing(self, name: str = OUTGOING) -> MailQueue:
        return self.queues.get(name)

    def send(self, mail: Mail, state: str | None = None) -> None:
        """James's ``sendMail``: a new mail enqueued on the spool, marked as sent by a mailet.

        Unlike ``ToProcessor`` this goes through the queue: the mail is processed later, by any
        spooler worker, starting in ``state`` (default: its own state, ``root`` for new mails).
        """
        mail.state = state or mail.state or ROOT
        mail.set_attribute(SENT_BY_MAILET, True)
        self.mail_logger(mail).info("sending %s to the spool in state %s", mail.name, mail.state)
        self.spool.enqueue(mail)

    # -- logging ------------------------------------------------------------------------------
    def mail_logger(self, mail: Mail) -> MailLogger:
        return MailLogger(self.logger, {"mail": mail.name, "state": mail.state})
