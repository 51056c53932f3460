"""The SMTP server: aiosmtpd's protocol with the intake handler, on an asyncio server.

``SmtpServer`` runs inside an existing event loop (``await start()`` / ``await stop()``);
``SmtpServerThread`` runs one in a background thread with its own loop (tests, embedding in a
synchronous process), like aiosmtpd's ``Controller``.

Logging: every record emitted during a session carries the MDC fields ``protocol``=SMTP,
``ip``, ``sessionId`` and, once authenticated, ``user``; during a mail transaction also
``mailId``, the name the accepted ``Mail`` gets (also sent in the 250 reply).

The client's host name is its IP address: no reverse DNS lookup is made (James does one).

DATA is this module's own ``smtp_DATA`` (aiosmtpd documents overriding command methods in a
subclass): the content is streamed into a bounded spool (``data.py``) instead of aiosmtpd's
in-memory list, and DATA ends its pipeline group (RFC 2920 3.1): PIPELINING is not offered,
so input that arrived with DATA or with the end of its content, before our reply, means the
client did not wait; whatever DATA's reply, the session then ends and nothing it sent after
DATA is executed (``forbid_unauth_pipelining``).

Every reply goes through ``IntakeSMTP.push`` (aiosmtpd documents it as the method subclasses
use to answer): there it gets its enhanced status code (``replies.py``), is delayed when the
session made too many errors, and the error that reaches ``hard_error_limit`` is followed by
``421 4.7.0`` and the end of the session (``errors.py``). DATA lines may be as long as
``max_line_length``, aiosmtpd's documented ``line_length_limit`` set per instance.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session, syntax

from mailserver import randomness
from mailserver.domains.api import DomainList
from mailserver.model.address import MailAddress, Username
from mailserver.model.mail import new_mail_name
from mailserver.observability.logging import mdc
from mailserver.observability.metrics import Metrics
from mailserver.queue.api import MailQueue
from mailserver.queue.content import MimeMessageStore
from mailserver.rrt.resolver import RecipientRewriter
from mailserver.security.auth_throttle import AuthThrottle
from mailserver.serving.connections import ConnectionDescription, on_loop
from mailserver.serving.server_thread import AsyncServerThread
from mailserver.serving.tls import reload_certificate
from mailserver.smtp.backpressure import (
    BackPressure,
    HealthCondition,
    MaintenanceCondition,
    SpoolSizeCondition,
    Stage,
)
from mailserver.smtp.config import SmtpConfig
from mailserver.smtp.data import ReceivedData, receive
from mailserver.smtp.errors import SessionErrors, is_error, too_many_errors
from mailserver.smtp.handler import PIPELINING_REFUSED, BareLineFeed, IntakeHandler
from mailserver.smtp.limits import ConnectionLimits
from mailserver.smtp.paths import HeaderParseError, parse_path
from mailserver.smtp.recipients import TOO_MANY_RECIPIENTS, RecipientValidator
from mailserver.smtp.replies import as_sent
from mailserver.users.api import UsersRepository

log = logging.getLogger(__name__)

class IntakeSession(Session):
    @property
    def login_data(self) -> Any:  # aiosmtpd logs a deprecation warning on every access; we do not use it
        return self._login_data

    @login_data.setter
    def login_data(self, value: Any) -> None:
        self._login_data = value


class IntakeEnvelope(Envelope):
    """One transaction; its ``mail_name`` is the name the accepted mail gets.

    ``data`` is the content while ``handle_DATA`` runs (aiosmtpd's ``original_content`` stays
    None: the content is in a spool, not in memory).
    """

    def __init__(self) -> None:
        super().__init__()
        self.mail_name = new_mail_name()
        self.data: ReceivedData | None = None
        self.overshoot = 0   # RCPTs refused for being over the recipient limit


class IntakeSMTP(SMTP):
    def __init__(self, handler: IntakeHandler, owner: SmtpServer, **kwargs: Any) -> None:
        c = owner.config
        # aiosmtpd's documented line limit, set before SMTP.__init__ makes the reader with it: DATA
        # lines of up to this many octets (smtp_DATA); commands keep aiosmtpd's command_size_limit.
        self.line_length_limit = c.max_line_length
        super().__init__(handler, **kwargs)
        self.owner = owner
        self.errors = SessionErrors(c.soft_error_limit, c.hard_error_limit, c.error_sleep_time)
        self._mid_reply = False   # the last line pushed was not the last of its reply
        self.session_id = randomness.token_hex(8)
        self.remote_addr: str | None = None
        self.connected_at: dt.datetime | None = None
        self.remote_host = "unknown"
        self._counted = False
        self.ending = False   # the session is being closed: commands already received are not run
        self.stream: asyncio.StreamReader | None = None
        self.receiving: ReceivedData | None = None   # the content of the DATA being read
        self._smtp_methods = {name: self._in_mdc(name, method) for name, method in self._smtp_methods.items()}

    # -- state -------------------------------------------------------------------------------
    def _create_session(self) -> Session:
        return IntakeSession(self.loop)

    def _create_envelope(self) -> Envelope:
        return IntakeEnvelope()

    def _getaddr(self, arg: str) -> tuple[str | None, str | None]:
        """aiosmtpd 1.4.6's parsing of a MAIL/RCPT path, without the ``typing.Protocol`` class its version
        defines on every call (2 % of the server's CPU at 16 sessions, issue 16) and with a fast path for
        plain ``<local@domain>`` (``paths.py``); same results."""
        if not arg:
            return "", ""
        try:
            addr, rest = parse_path(arg)
        except HeaderParseError:
            return None, None
        localpart = addr.rpartition("@")[0]
        if self.local_part_limit and len(localpart) > self.local_part_limit:
            return None, None
        return addr, rest

    def _cb_client_connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super()._cb_client_connected(reader, writer)
        self.stream = reader   # DATA content is read from it by smtp_DATA
        if not self.owner.config.strict_crlf:
            return
        # aiosmtpd reads command lines (and AUTH responses) up to a bare LF; DATA is read up to CRLF.
        readuntil = reader.readuntil
        overrun = False   # the line being read is over the limit: aiosmtpd reads it in pieces to answer "too long"

        async def strict_readuntil(separator: bytes = b"\n") -> bytes:
            nonlocal overrun
            try:
                line = await readuntil(separator)
            except asyncio.LimitOverrunError:
                overrun = True
                raise
            # The end of an over-long line may start with the LF of its CRLF (the pieces cut after the CR)
            continued, overrun = overrun, False
            if separator == b"\n" and not continued and not line.endswith(b"\r\n"):
                raise BareLineFeed("command line not ended by CRLF")
            return line

        # Patched on this reader alone; it takes the bytes separators aiosmtpd passes, not any buffer.
        reader.readuntil = strict_readuntil  # type: ignore[method-assign, assignment]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if not self._counted:
            self._counted = True
            peer = transport.get_extra_info("peername")
            if isinstance(peer, tuple) and peer:
                self.remote_addr = str(peer[0])
                self.remote_host = self.remote_addr  # no reverse DNS lookup (module docs)
            self.connected_at = dt.datetime.now(dt.UTC)
            self.owner._sessions.add(self)
            self.owner.limits.opened(self.remote_addr)

    def connection_lost(self, error: Exception | None) -> None:
        if self in self.owner._sessions:
            self.owner._sessions.discard(self)
            self.owner.limits.closed(self.remote_addr)
        super().connection_lost(error)

    def tls_info(self) -> tuple[str, str] | None:
        ssl_object = (self.session.ssl or {}).get("ssl_object") if self.session else None
        if ssl_object is None:
            return None
        cipher = ssl_object.cipher()
        return str(ssl_object.version()), str(cipher[0] if cipher else "")

    def has_pending_input(self) -> bool:
        """Bytes already received and not yet read (the client did not wait for our reply)."""
        buffer = getattr(self._reader, "_buffer", None)
        return bool(buffer)

    def _stop_reading(self) -> None:
        """No command received so far or later is run: the buffered input is dropped (as aiosmtpd
        drops the plain-text input at STARTTLS) and ``ending`` makes the command wrapper skip the rest."""
        self.ending = True
        buffer = getattr(self._reader, "_buffer", None)
        if buffer:
            buffer.clear()

    def close_soon(self) -> None:
        """Close once the reply being sent now has been written; commands still buffered are not run."""
        self._stop_reading()
        transport = self.transport
        if transport is not None:
            self.loop.call_soon(transport.close)

    def close_now(self) -> None:
        """Close after the replies already pushed (the transport flushes them first)."""
        self._stop_reading()
        if self.transport is not None:
            self.transport.close()

    # -- DATA --------------------------------------------------------------------------------
    @syntax("DATA")
    async def smtp_DATA(self, arg: str | None) -> None:
        """aiosmtpd's DATA with the content streamed to a spool and DATA ending the pipeline group."""
        forbid = self.owner.config.forbid_unauth_pipelining
        pipelined = forbid and self.has_pending_input()   # sent with DATA, before any reply to it
        if await self.check_helo_needed() or await self.check_auth_needed("DATA"):
            if pipelined:
                self.close_now()
            return
        assert self.envelope is not None
        refusal = "503 5.5.1 Error: need RCPT command" if not self.envelope.rcpt_tos else (
            "501 5.5.4 Syntax: DATA" if arg else None)
        if refusal is None and pipelined:
            log.warning("DATA refused: content sent before the 354 reply (PIPELINING not offered)")
            refusal = PIPELINING_REFUSED
        if refusal is not None:
            await self._end_of_group(refusal, pipelined)
            return
        await self.push("354 End data with <CR><LF>.<CR><LF>")
        assert self.stream is not None
        c = self.owner.config
        self.receiving = data = ReceivedData.spooled(c.data_memory)
        try:
            await receive(self.stream, data, size_limit=c.max_message_size or None,
                          line_limit=self.line_length_limit, strict_crlf=c.strict_crlf)
        finally:
            self.receiving = None
        envelope = self.envelope
        try:
            pipelined = forbid and self.has_pending_input()   # before our reply: the client did not wait
            if data.refusal is not None:
                log.warning("mail %s refused: %s", getattr(envelope, "mail_name", "?"), data.refusal)
                status = data.refusal
            elif pipelined:
                log.warning("mail %s refused: input pipelined after the end of DATA (PIPELINING not offered)",
                            getattr(envelope, "mail_name", "?"))
                status = PIPELINING_REFUSED
            else:
                envelope.data = data  # type: ignore[attr-defined]
                status = await self.event_handler.handle_DATA(self, self.session, envelope)
                if status.startswith("250"):
                    self.errors.forgive()   # as Postfix: errors before an accepted mail are forgiven
        finally:
            data.close()   # on every path, cancellation (disconnect) included: memory or temp file given back
            self.envelope = self._create_envelope()
        await self._end_of_group(status, pipelined)

    async def _end_of_group(self, reply: str, pipelined: bool) -> None:
        await self.push(reply)
        if pipelined:
            log.warning("input pipelined after DATA (PIPELINING not offered): closing the session")
            self.close_now()

    # -- WebAdmin's /servers/channels ---------------------------------------------------------
    @property
    def user(self) -> Username | None:
        user = self.session.auth_data if self.session is not None and self.session.authenticated else None
        return user if isinstance(user, Username) else None

    def describe(self) -> ConnectionDescription:
        transport = self.transport
        open_ = transport is not None and not transport.is_closing()
        user = self.user
        return ConnectionDescription("SMTP", "smtpserver", self.remote_addr, self.connected_at, is_active=open_,
                                     is_open=open_, is_writable=open_, is_encrypted=self.tls_info() is not None,
                                     username=user.value if user else None,
                                     protocol_specific={"loggedInUser": user.value} if user else {})

    # -- logging context ---------------------------------------------------------------------
    def _mdc_fields(self) -> dict[str, Any]:
        user = self.session.auth_data if self.session is not None and self.session.authenticated else None
        return {"protocol": "SMTP", "ip": self.remote_addr, "sessionId": self.session_id,
                "user": user.value if isinstance(user, Username) else None}

    def _in_mdc(self, command: str, method: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        metrics = self.owner.metrics
        # James's command timers: hookable commands lowercased (SMTP-rcpt), DATA as received.
        timer = metrics.timer(f"SMTP-{command if command == 'DATA' else command.lower()}") if metrics else None

        @functools.wraps(method)
        async def run(arg: Any) -> None:
            if self.ending:
                return   # read from the buffer after the session was ended: never executed
            envelope = self.envelope
            with mdc(**self._mdc_fields(), mailId=getattr(envelope, "mail_name", None)):
                if timer is None:
                    await method(arg)
                    return
                with timer.time():
                    await method(arg)
        return run

    # -- protocol ----------------------------------------------------------------------------
    async def _handle_client(self) -> None:
        with mdc(**self._mdc_fields()):
            log.info("connection from %s", self.remote_addr)
            too_many = self.owner.limits.refusal(self.remote_addr)
            if too_many:
                await self._refuse(too_many)
                return
            handler: IntakeHandler = self.event_handler
            refusal = await handler.refusal(Stage.CONNECT)
            if refusal:
                await self._refuse(refusal)
                return
            await super()._handle_client()

    async def _refuse(self, reply: str) -> None:
        log.info("connection refused: %s", reply)
        self.ending = True
        await self.push(reply)
        if self.transport is not None:
            self.transport.close()

    async def push(self, status: Any) -> None:
        """Every reply, aiosmtpd's included: its enhanced status code, the error pacing and limit."""
        if not isinstance(status, str):
            await super().push(status)
            return
        status = as_sent(status, self.hostname)
        if not self._mid_reply:
            await self.errors.pace()   # once per reply, not per line of a multi-line one
        self._mid_reply = status[3:4] == "-"
        await super().push(status)
        if self._counts_as_error(status) and self.errors.record() and not self.ending:
            log.warning("%d errors without an accepted mail: closing the session", self.errors.count)
            await super().push(too_many_errors(self.hostname))
            self.close_now()

    def _counts_as_error(self, reply: str) -> bool:
        if not is_error(reply):
            return False
        if reply.startswith(TOO_MANY_RECIPIENTS):
            # Postfix: a client that pipelined more RCPTs than the limit is not at fault, up to the overshoot limit
            return getattr(self.envelope, "overshoot", 0) > self.owner.config.recipient_overshoot_limit
        return True


class SmtpServer:
    """The SMTP front end.

    ``rewriter`` (the mailet container's ``RecipientRewriter``) with ``users`` turns on James's
    recipient validation at RCPT (``config.validate_recipients``); without it every recipient
    of a local domain is accepted and unknown ones end in the ``local-address-error``
    processor. ``postmaster`` is what a bare ``RCPT TO:<postmaster>`` delivers to: the mailet
    container's postmaster (``postmaster@localhost`` when not given, James's default domain).
    AUTH goes through ``auth_throttle`` (``security.auth_throttle``; none without one).
    """

    def __init__(self, config: SmtpConfig, spool: MailQueue, domains: DomainList,
                 users: UsersRepository | None = None, *, store: MimeMessageStore | None = None,
                 back_pressure: BackPressure | None = None, healthy: Callable[[], bool] | None = None,
                 healthy_in_memory: bool = False, maintenance: Callable[[], bool] | None = None,
                 maintenance_known: Callable[[], bool | None] | None = None, metrics: Metrics | None = None,
                 rewriter: RecipientRewriter | None = None, postmaster: MailAddress | None = None,
                 auth_throttle: AuthThrottle | None = None) -> None:
        self.config = config
        self.metrics = metrics
        bp = back_pressure or BackPressure()
        if maintenance is not None:
            bp.add(MaintenanceCondition(maintenance, known=maintenance_known))
        if healthy is not None:
            bp.add(HealthCondition(healthy, in_memory=healthy_in_memory))
        if config.spool_size_limit is not None:
            bp.add(SpoolSizeCondition(spool, config.spool_size_limit))
        self.back_pressure = bp
        recipients = None
        if config.validate_recipients and users is not None and rewriter is not None:
            recipients = RecipientValidator(users, rewriter)
        elif config.validate_recipients:
            log.warning("recipients of local domains are not validated at RCPT: %s",
                        "no users repository" if users is None else "no recipient rewrite table")
        self.handler = IntakeHandler(config, spool, domains, users, store=store, back_pressure=bp,
                                     recipients=recipients, postmaster=postmaster)
        if auth_throttle is not None:
            self.handler.login_throttle = auth_throttle
        self.tls_context = config.tls_context()
        self._server: asyncio.AbstractServer | None = None
        self._sessions: set[IntakeSMTP] = set()
        self.limits = ConnectionLimits(config.max_connections, config.max_connections_per_ip)
        self._loop: asyncio.AbstractEventLoop | None = None
        self.port: int | None = None

    def _protocol(self) -> IntakeSMTP:
        c = self.config
        return IntakeSMTP(self.handler, self,
                          data_size_limit=c.max_message_size or None,
                          hostname=c.hostname, ident=c.software_name,
                          tls_context=self.tls_context, require_starttls=c.require_starttls,
                          timeout=c.timeout, auth_require_tls=c.auth_require_tls,
                          loop=asyncio.get_running_loop())

    async def start(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._protocol, host=self.config.host, port=self.config.port)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("SMTP server listening on %s:%s", self.config.host, self.port)

    def reload_certificate(self) -> bool:
        return reload_certificate(self.tls_context, self.config.tls_cert, self.config.tls_key)

    def describe_connections(self) -> list[ConnectionDescription]:
        return on_loop(self._loop, lambda: [s.describe() for s in self._sessions])

    def data_received(self) -> list[int]:
        """Bytes received so far by each DATA under way, one entry per session reading one."""
        return on_loop(self._loop, lambda: [s.receiving.size for s in self._sessions if s.receiving is not None])

    def disconnect(self, usernames: frozenset[str] | None) -> None:
        def close() -> None:
            for session in list(self._sessions):
                user = session.user
                if session.transport is not None and (usernames is None or (user and user.value in usernames)):
                    session.transport.close()
        on_loop(self._loop, close)

    async def stop(self) -> None:
        if self._server is None:
            return
        self._server.close()
        for session in list(self._sessions):
            if session.transport is not None:
                session.transport.close()
        await self._server.wait_closed()
        self._server = None
        await asyncio.sleep(0)  # let connection_lost callbacks run
        self.handler.close()
        log.info("SMTP server stopped")


class SmtpServerThread(AsyncServerThread):
    """Run an ``SmtpServer`` on its own event loop in a daemon thread."""

    kind = "SMTP"
