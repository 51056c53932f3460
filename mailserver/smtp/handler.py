"""The intake: aiosmtpd hooks turning an SMTP transaction into a ``Mail`` on the spool queue.

What a transaction goes through (James's SMTP hooks, in order):

* every command line must end with CRLF (``strict_crlf``, ``500 5.0.0``);
* connect / HELO / EHLO: back-pressure ``CONNECT`` conditions (maintenance, backend health) ->
  ``421 4.3.2`` and the connection is closed;
* MAIL FROM: back-pressure again, spool size included -> ``452 4.3.1`` when over its limit;
* RCPT TO: beyond ``max_recipients`` recipients ``452 4.5.3 Too many recipients``; a recipient
  of a local domain (``DomainList``) is accepted when it exists
  (``recipients.py``: an account, a rewrite-table mapping, ``postmaster``), else
  ``550 5.1.1 Unknown user``; any other domain only for an authenticated session or a client
  in ``authorized_networks``, otherwise ``550 5.7.1 Requested action not taken: relaying
  denied`` (unless ``auth_required`` is off: the mailet container's ``relay-denied`` processor
  then decides, as James with ``authRequired=false``). ``<postmaster>`` without a domain (RFC
  5321 4.5.1) is the server's postmaster address and is always accepted;
* DATA (``IntakeSMTP.smtp_DATA``, ``data.py``): bare CR/LF refused (``500 5.0.0``, James's
  smuggling fix), lines over ``max_line_length`` (``500 5.5.2``, naming the limit) and content
  over the size limit refused, input pipelined
  with DATA or after its end refused (``554 5.5.0``) and the session closed;
* end of DATA (here): a ``Received:`` header prepended, the ``Mail`` built with James's intake
  attributes and enqueued on ``spool``; ``250`` only once ``enqueue`` returned (durable),
  ``451 4.3.0`` when it raised (nothing accepted);
* at every reply (``IntakeSMTP.push``): an enhanced status code (``replies.py``), and Postfix's
  error limits (``errors.py``): slowed after ``soft_error_limit`` errors, closed at
  ``hard_error_limit``.

Memory: the content arrives in a spool (``envelope.data``: at most ``SmtpConfig.data_memory``
bytes in memory, the rest in a temporary file) that ``smtp_DATA`` closes after this hook. With
a ``MimeMessageStore`` the Received header and the spool are streamed into the blob store, no
full copy in memory; without one (tests) the content travels inline (``MailContent.of_bytes``).
"""

from __future__ import annotations

import asyncio
import contextvars
import io
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import IO, TYPE_CHECKING, Any, TypeVar

from aiosmtpd.smtp import Envelope, Session

from mailserver.domains.api import DomainList
from mailserver.mailbox.content import MalformedMessage
from mailserver.model.address import InvalidAddress, MailAddress, Username
from mailserver.model.mail import (
    HELO,
    SMTP_AUTH_USER,
    SMTP_IS_AUTH_NETWORK,
    SMTP_SESSION_ID,
    Mail,
    MailContent,
)
from mailserver.queue.api import MailQueue
from mailserver.queue.content import MimeMessageStore
from mailserver.smtp.auth import SmtpAuthenticator
from mailserver.smtp.backpressure import UNKNOWN, BackPressure, Stage
from mailserver.smtp.config import SmtpConfig, in_networks
from mailserver.smtp.data import BAD_LINE_ENDING
from mailserver.smtp.recipients import POSTMASTER, RecipientValidator, too_many_recipients, unknown_user
from mailserver.users.api import UsersRepository

if TYPE_CHECKING:
    from mailserver.smtp.server import IntakeSMTP

log = logging.getLogger(__name__)
T = TypeVar("T")

SSL_PROTOCOL = "org.apache.james.ssl.protocol"
SSL_CIPHER = "org.apache.james.ssl.cipher"

RELAY_DENIED = "550 5.7.1 Requested action not taken: relaying denied"
PIPELINING_REFUSED = "554 5.5.0 Error: SMTP protocol synchronization"
NOT_ACCEPTED = "451 4.3.0 Temporary failure, message not accepted, try again later"
_CHUNK = 64 * 1024


class BareLineFeed(ValueError):
    """A command line ended by a bare LF (``strict_crlf``)."""


class _ChainedReader(io.RawIOBase):
    """Reads the binary files ``parts`` one after the other without concatenating them."""

    def __init__(self, parts: Sequence[IO[bytes]]) -> None:
        self._parts = list(parts)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self._parts:
            chunk = self._parts[0].read(len(buffer))
            if chunk:
                buffer[:len(chunk)] = chunk
                return len(chunk)
            self._parts.pop(0)
        return 0


class IntakeHandler(SmtpAuthenticator):
    def __init__(self, config: SmtpConfig, spool: MailQueue, domains: DomainList,
                 users: UsersRepository | None = None, *, store: MimeMessageStore | None = None,
                 back_pressure: BackPressure | None = None, recipients: RecipientValidator | None = None,
                 postmaster: MailAddress | None = None) -> None:
        self.config = config
        self.spool = spool
        self.domains = domains
        self.users = users
        self.store = store
        self.recipients = recipients   # None: every recipient of a local domain is accepted
        # RFC 5321 4.5.1's bare <postmaster>: the mailet container's postmaster (James appends its default domain)
        self.postmaster = postmaster or MailAddress.of(f"{POSTMASTER}@localhost")
        self.back_pressure = back_pressure or BackPressure()
        self.networks = config.networks
        # Blocking calls (queue, blob store, Cassandra, password hashing) run on a bounded pool of
        # their own: the event loop never waits, and the queue adapter's per-thread broker
        # connections stay bounded by ``config.io_threads``.
        self._executor: ThreadPoolExecutor | None = None

    # -- helpers -----------------------------------------------------------------------------
    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on the I/O pool, with the caller's logging context (MDC)."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=self.config.io_threads, thread_name_prefix="smtp-io")
        context = contextvars.copy_context()
        return await asyncio.get_running_loop().run_in_executor(self._executor, context.run, fn, *args)

    def close(self) -> None:
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    async def refusal(self, stage: Stage) -> str | None:
        known = self.back_pressure.refusal_at_once(stage)
        if known is not UNKNOWN:
            return known
        return await self.blocking(self.back_pressure.refusal, stage)

    def in_authorized_network(self, server: IntakeSMTP) -> bool:
        return in_networks(server.remote_addr, self.networks)

    @staticmethod
    def authenticated_user(session: Session) -> Username | None:
        data = session.auth_data
        return data if session.authenticated and isinstance(data, Username) else None

    # -- hooks -------------------------------------------------------------------------------
    async def handle_exception(self, error: Exception) -> str:
        """A backend failing mid-command (domain list, users) is temporary: never answer 5xx for it."""
        if isinstance(error, BareLineFeed):
            log.warning("command line ended by a bare LF: refused")
            return BAD_LINE_ENDING
        log.error("SMTP command failed: %s: %s", type(error).__name__, error, exc_info=error)
        return "451 4.3.0 Temporary internal failure, try again later"

    async def handle_HELO(self, server: IntakeSMTP, session: Session, envelope: Envelope, hostname: str) -> str:
        refusal = await self.refusal(Stage.CONNECT)
        if refusal:
            server.close_soon()
            return refusal
        session.host_name = hostname
        return f"250 {self.config.hostname} Hello {hostname} [{server.remote_addr}]"

    async def handle_EHLO(self, server: IntakeSMTP, session: Session, envelope: Envelope, hostname: str,
                          responses: list[str]) -> list[str]:
        refusal = await self.refusal(Stage.CONNECT)
        if refusal:
            server.close_soon()
            return [refusal]
        session.host_name = hostname
        responses = [r for r in responses if self.users is not None or not r.startswith("250-AUTH")]
        responses[0] = f"250-{self.config.hostname} Hello {hostname} [{server.remote_addr}]"
        # Every reply carries an enhanced status code, aiosmtpd's too (IntakeSMTP.push, replies.py).
        # Not announced: PIPELINING (a client waits for each reply, see forbid_unauth_pipelining).
        responses.insert(len(responses) - 1, "250-ENHANCEDSTATUSCODES")
        return responses

    async def handle_MAIL(self, server: IntakeSMTP, session: Session, envelope: Envelope, address: str,
                          mail_options: list[str]) -> str:
        refusal = await self.refusal(Stage.MAIL)
        if refusal:
            if refusal.startswith("421"):
                server.close_soon()
            return refusal
        if address != "<>":
            try:
                MailAddress.of(address)
            except InvalidAddress:
                return f"553 5.1.7 Invalid sender address <{address}>"
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        log.info("MAIL FROM:<%s>", "" if address == "<>" else address)
        return f"250 2.1.0 Sender <{'' if address == '<>' else address}> OK"

    async def handle_RCPT(self, server: IntakeSMTP, session: Session, envelope: Envelope, address: str,
                          rcpt_options: list[str]) -> str:
        limit = self.config.max_recipients
        if limit is not None and len(envelope.rcpt_tos) >= limit:
            envelope.overshoot += 1  # type: ignore[attr-defined]
            log.warning("refused RCPT <%s>: over the limit of %d recipients a message", address, limit)
            return too_many_recipients(limit)
        if address.lower() == POSTMASTER:   # no domain: RFC 5321 4.5.1 says it MUST be accepted
            return self._accept(envelope, self.postmaster, rcpt_options, "postmaster")
        try:
            recipient = MailAddress.of(address)
        except InvalidAddress:
            return f"553 5.1.3 Invalid recipient address <{address}>"
        local, known = await self.blocking(self._recipient_checks, recipient)   # one trip to the pool
        if (not local and self.config.auth_required
                and not (self.authenticated_user(session) or self.in_authorized_network(server))):
            log.warning("rejected RCPT <%s>: %s not authorized to relay to %s", recipient, server.remote_addr,
                        recipient.domain)
            return RELAY_DENIED
        if local and not known:
            log.warning("rejected RCPT <%s>: no such user or mapping (sender <%s>)", recipient,
                        envelope.mail_from or "")
            return unknown_user(recipient)
        return self._accept(envelope, recipient, rcpt_options, "local" if local else "relay")

    def _recipient_checks(self, recipient: MailAddress) -> tuple[bool, bool]:
        """(of a local domain, a known local recipient): the lookups RCPT needs, run together off the loop."""
        if not self.domains.contains(recipient.domain):
            return False, False
        return True, self.recipients is None or self.recipients.is_valid_local(recipient)

    @staticmethod
    def _accept(envelope: Envelope, recipient: MailAddress, rcpt_options: list[str], kind: str) -> str:
        envelope.rcpt_tos.append(str(recipient))
        envelope.rcpt_options.extend(rcpt_options)
        log.info("RCPT TO:<%s> (%s)", recipient, kind)
        return f"250 2.1.5 Recipient <{recipient}> OK"

    async def handle_DATA(self, server: IntakeSMTP, session: Session, envelope: Envelope) -> str:
        """The content is ``envelope.data`` (checked by ``smtp_DATA``), its spool at position 0."""
        name = envelope.mail_name  # type: ignore[attr-defined]
        spool = envelope.data.spool  # type: ignore[attr-defined]
        mail = self.build_mail(server, session, envelope, name)
        received = self.received_header(server, session, envelope).encode("utf-8", "surrogateescape")
        refusal = await self.blocking(self._store_and_enqueue, mail, received, spool)   # one trip to the pool
        if refusal is not None:
            return refusal
        log.info("mail %s accepted from <%s> for %s (%d bytes)", name, mail.sender or "",
                 ",".join(str(r) for r in mail.recipients), mail.content.size)
        return f"250 2.6.0 Message received, queued as {name}"

    def _store_and_enqueue(self, mail: Mail, received: bytes, spool: IO[bytes]) -> str | None:
        """Content to the blob store, then the mail to the spool; the refusal to answer, None when queued.
        Nothing is left behind on a refusal: content stored for a mail that could not be queued is deleted."""
        name = mail.name
        try:
            mail.content = self._content(received, spool)
        except MalformedMessage as exc:   # retrying cannot help: a permanent refusal, not 451
            log.warning("mail %s refused: %s", name, exc)
            return f"554 5.6.0 Message content not accepted: {exc}"
        except Exception:
            log.exception("mail %s: storing the content failed", name)
            return NOT_ACCEPTED
        try:
            # The blobs just written become the queue entry's: no copy when the store does not deduplicate.
            self.spool.enqueue(mail, hand_over=True)
        except Exception:
            log.exception("mail %s: enqueue on %s failed; not accepted", name, getattr(self.spool, "name", "spool"))
            if self.store is not None:
                try:
                    self.store.delete(mail.content)
                except Exception:
                    log.warning("mail %s: could not delete the orphan content blobs", name, exc_info=True)
            return NOT_ACCEPTED
        return None

    # -- building the mail -------------------------------------------------------------------
    def _content(self, received: bytes, spool: IO[bytes]) -> MailContent:
        if self.store is None:
            return MailContent.of_bytes(received + spool.read())
        reader = io.BufferedReader(_ChainedReader([io.BytesIO(received), spool]), buffer_size=_CHUNK)
        return self.store.save(reader)

    def build_mail(self, server: IntakeSMTP, session: Session, envelope: Envelope, name: str) -> Mail:
        sender = None if envelope.mail_from in (None, "", "<>") else MailAddress.of(envelope.mail_from)
        mail = Mail(name=name, sender=sender, recipients=[MailAddress.of(r) for r in envelope.rcpt_tos],
                    content=MailContent.of_bytes(b""), remote_host=server.remote_host,
                    remote_addr=server.remote_addr or "")
        mail.set_attribute(SMTP_SESSION_ID, server.session_id)
        if session.host_name:
            mail.set_attribute(HELO, session.host_name)
        user = self.authenticated_user(session)
        if user is not None:
            mail.set_attribute(SMTP_AUTH_USER, user.value)
        if self.in_authorized_network(server):
            mail.set_attribute(SMTP_IS_AUTH_NETWORK, True)  # James sets it only when true
        tls = server.tls_info()
        if tls:
            mail.set_attribute(SSL_PROTOCOL, tls[0])
            mail.set_attribute(SSL_CIPHER, tls[1])
        return mail

    def received_header(self, server: IntakeSMTP, session: Session, envelope: Envelope,
                        now: datetime | None = None) -> str:
        """James's ``Received`` header (ReceivedDataLineFilter), service type per RFC 3848."""
        if session.extended_smtp:
            service = "ESMTP" + ("S" if server.tls_info() else "") + ("A" if self.authenticated_user(session) else "")
            helo_mode = "EHLO"
        else:
            service, helo_mode = "SMTP", "HELO"
        lines = [f"Received: from {server.remote_host} ({helo_mode} {session.host_name}) ([{server.remote_addr}])",
                 f"          by {self.config.hostname} ({self.config.software_name}) with {service} "
                 f"ID {server.session_id}"]
        if len(envelope.rcpt_tos) == 1:
            lines.append(f"          for <{envelope.rcpt_tos[0]}>;")
        else:
            lines[-1] += ";"
        lines.append("          " + format_datetime(now or datetime.now(UTC)))
        return "\r\n".join(lines) + "\r\n"

