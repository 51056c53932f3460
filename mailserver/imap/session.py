"""One IMAP connection: the state machine (RFC 3501 §3), dispatch, and the commands valid in any state
or before authentication (CAPABILITY, NOOP, LOGOUT, ID, ENABLE, STARTTLS, LOGIN, AUTHENTICATE) plus IDLE.

Commands run one at a time. A handler returns the text of its tagged response (``"OK ..."``);
untagged data is sent as it is produced. Before the tagged response of a command run with a
mailbox selected, the session reports what changed in it (``_refresh``): EXISTS, RECENT, FETCH
FLAGS and, except during FETCH, STORE, SEARCH, SORT and THREAD, EXPUNGE.

Errors map to responses: ``ParseError`` -> BAD; mailbox-layer errors -> NO with a response code
(RFC 5530: NONEXISTENT, ALREADYEXISTS, OVERQUOTA, UNAVAILABLE for maintenance mode, ...);
anything unexpected -> ``NO [SERVERBUG]`` and a log line with the session's MDC; the connection
stays usable.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextvars
import datetime as dt
import functools
import logging
from typing import TYPE_CHECKING, Any

from mailserver import randomness
from mailserver.imap.commands_mailboxes import MailboxCommands
from mailserver.imap.commands_messages import MessageCommands
from mailserver.imap.commands_quota import QuotaCommands
from mailserver.imap.commands_sort import SortCommands
from mailserver.imap.compression import Deflater, InflatingReader
from mailserver.imap.mailbox_feed import MailboxFeed
from mailserver.imap.parser import Args, Command, ParseError, parse_command
from mailserver.imap.reader import (
    CommandReader,
    ConnectionClosed,
    LineTooLong,
    LiteralTooLarge,
    NonSyncLiteralRefused,
    OverlongLineUnskipped,
)
from mailserver.imap.response import quoted
from mailserver.imap.search import BadCharset
from mailserver.imap.selected import SelectedMailbox
from mailserver.imap.session_base import Bye, No, State
from mailserver.mailbox.content import MalformedMessage
from mailserver.mailbox.errors import (
    ConcurrentModification,
    InboxCannotBeRenamedOrDeleted,
    MailboxExists,
    MailboxHasChildren,
    MailboxNotFound,
    MaintenanceMode,
    OverQuota,
)
from mailserver.mailbox.hooks import PreDeletionHookFailed
from mailserver.model.address import InvalidAddress, Username
from mailserver.model.events import Added, Expunged, FlagsUpdated, MailboxDeletion, MailboxEvent, MailboxRenamed
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import INBOX, InvalidMailboxName, MailboxPath, printable
from mailserver.observability.logging import mdc
from mailserver.serving.connection_caps import Over
from mailserver.serving.connections import ConnectionDescription

if TYPE_CHECKING:
    from mailserver.imap.server import ImapServer

log = logging.getLogger(__name__)


ANY = frozenset(State)
NOT_AUTH = frozenset({State.NOT_AUTHENTICATED})
AUTH = frozenset({State.AUTHENTICATED, State.SELECTED})
SELECTED = frozenset({State.SELECTED})

# name -> (method, states in which it is valid)
COMMANDS: dict[str, tuple[str, frozenset[State]]] = {
    "CAPABILITY": ("cmd_capability", ANY), "NOOP": ("cmd_noop", ANY), "LOGOUT": ("cmd_logout", ANY),
    "ID": ("cmd_id", ANY), "STARTTLS": ("cmd_starttls", NOT_AUTH), "LOGIN": ("cmd_login", NOT_AUTH),
    "AUTHENTICATE": ("cmd_authenticate", NOT_AUTH), "ENABLE": ("cmd_enable", AUTH), "IDLE": ("cmd_idle", AUTH),
    "SELECT": ("cmd_select", AUTH), "EXAMINE": ("cmd_examine", AUTH), "CREATE": ("cmd_create", AUTH),
    "DELETE": ("cmd_delete", AUTH), "RENAME": ("cmd_rename", AUTH), "SUBSCRIBE": ("cmd_subscribe", AUTH),
    "UNSUBSCRIBE": ("cmd_unsubscribe", AUTH), "LIST": ("cmd_list", AUTH), "LSUB": ("cmd_lsub", AUTH),
    "STATUS": ("cmd_status", AUTH), "APPEND": ("cmd_append", AUTH), "NAMESPACE": ("cmd_namespace", AUTH),
    "CHECK": ("cmd_check", SELECTED), "CLOSE": ("cmd_close", SELECTED), "UNSELECT": ("cmd_unselect", SELECTED),
    "EXPUNGE": ("cmd_expunge", SELECTED), "UID EXPUNGE": ("cmd_uid_expunge", SELECTED),
    "SEARCH": ("cmd_search", SELECTED), "UID SEARCH": ("cmd_search", SELECTED),
    "FETCH": ("cmd_fetch", SELECTED), "UID FETCH": ("cmd_fetch", SELECTED),
    "STORE": ("cmd_store", SELECTED), "UID STORE": ("cmd_store", SELECTED),
    "COPY": ("cmd_copy", SELECTED), "UID COPY": ("cmd_copy", SELECTED),
    "MOVE": ("cmd_move", SELECTED), "UID MOVE": ("cmd_move", SELECTED),
    "GETQUOTAROOT": ("cmd_getquotaroot", AUTH), "GETQUOTA": ("cmd_getquota", AUTH),
    "SETQUOTA": ("cmd_setquota", AUTH), "COMPRESS": ("cmd_compress", AUTH),
    "SORT": ("cmd_sort", SELECTED), "UID SORT": ("cmd_sort", SELECTED),
    "THREAD": ("cmd_thread", SELECTED), "UID THREAD": ("cmd_thread", SELECTED),
}
# RFC 3501 §7.4.1: no EXPUNGE response while these run (sequence numbers would shift under the client).
NO_EXPUNGE_DURING = {"FETCH", "STORE", "SEARCH", "SORT", "THREAD"}
# Queued untagged responses beyond this many octets are sent before the tagged one.
UNSENT_LIMIT = 64 * 1024


class Session(MailboxCommands, SortCommands, MessageCommands, QuotaCommands):
    def __init__(self, server: ImapServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()   # sessions are made by the server's connection handler
        self.config = server.config
        self.manager = server.manager
        self.reader, self.writer = reader, writer
        self.state = State.NOT_AUTHENTICATED
        self.user: Username | None = None
        self.selected: SelectedMailbox | None = None
        self.feed: MailboxFeed | None = None
        self.left_by_failed_select: SelectedMailbox | None = None
        self.tls = writer.get_extra_info("sslcontext") is not None
        self.condstore = False
        self.qresync = False   # ENABLE QRESYNC: VANISHED instead of EXPUNGE, UIDs in every FETCH
        self.deflater: Deflater | None = None   # COMPRESS=DEFLATE once the client asked
        self.auth_failures = 0
        self.session_id = randomness.token_hex(8)
        self.connected_at = dt.datetime.now(dt.UTC)
        self.request_count = 0
        self.idling = False
        self._unsent: list[bytes] = []   # queued by ``write``/``queue``, sent together by ``drain``
        self._unsent_size = 0
        peer = writer.get_extra_info("peername")
        self.ip = str(peer[0]) if isinstance(peer, tuple) and peer else None
        self.commands = CommandReader(reader, self.send, max_line_length=self.config.max_line_length,
                                      max_literal_size=self.config.max_literal_size,
                                      max_append_size=self.config.max_append_size,
                                      max_literal_size_before_login=self.config.max_literal_size_before_login,
                                      authenticated=lambda: self.state is not State.NOT_AUTHENTICATED)

    # -- plumbing ----------------------------------------------------------------------------------
    async def send(self, data: bytes) -> None:
        """Send ``data`` now, after whatever was queued before it."""
        self.write(data)
        await self.drain()

    def write(self, data: bytes) -> None:
        """Queue octets for the client; ``drain`` sends all that is queued in one socket write."""
        if data:
            self._unsent.append(data)
            self._unsent_size += len(data)

    async def queue(self, data: bytes) -> None:
        """Queue untagged data to go with the command's tagged response (one write a command);
        sent at once when the queue grows large, so that a long response keeps the socket's backpressure."""
        self.write(data)
        if self._unsent_size >= UNSENT_LIMIT:
            await self.drain()

    async def drain(self) -> None:
        data = b"".join(self._unsent)
        self._unsent.clear()
        self._unsent_size = 0
        if data and self.deflater is not None:   # compressed once COMPRESS is active, flushed at each send
            data = self.deflater.compress(data) + self.deflater.flush()
        if data:
            self.writer.write(data)
        await self.writer.drain()

    async def blocking(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking call (mailbox manager, users repository) in the server's pool, MDC included."""
        context = contextvars.copy_context()
        call = functools.partial(context.run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self.server.pool, call)

    def _mdc(self) -> dict[str, Any]:
        return {"protocol": "IMAP", "ip": self.ip, "sessionId": self.session_id,
                "user": self.user.value if self.user else None}

    def path(self, name: str) -> MailboxPath:
        assert self.user is not None
        try:
            return MailboxPath.of(self.user, name)
        except InvalidMailboxName as exc:
            raise No(str(exc), "CANNOT") from None

    @property
    def idle_timeout(self) -> float:
        """Seconds a client may stay silent: short before login (nobody accountable yet), RFC 3501's after."""
        if self.state is State.NOT_AUTHENTICATED:
            return self.config.idle_timeout_before_login
        return self.config.idle_timeout

    def idle_bye(self) -> Bye:
        if self.state is State.NOT_AUTHENTICATED:
            return Bye(f"Autologout; no login after {self.config.idle_timeout_before_login:g} seconds idle")
        return Bye("Autologout; idle for too long")

    @property
    def auth_allowed(self) -> bool:
        return self.tls or not self.config.auth_require_tls

    def capabilities(self) -> list[str]:
        caps = ["IMAP4rev1", "LITERAL+", "SASL-IR", "ID", "ENABLE", "IDLE", "NAMESPACE", "UIDPLUS", "MOVE",
                "UNSELECT", "CHILDREN", "LIST-EXTENDED", "LIST-STATUS", "SPECIAL-USE", "CONDSTORE", "QRESYNC",
                "ESEARCH", "QUOTA", "QUOTA=RES-MESSAGE", "QUOTA=RES-STORAGE", "SORT", "THREAD=ORDEREDSUBJECT",
                "THREAD=REFERENCES",
                f"APPENDLIMIT={self.config.max_append_size}"]
        if self.config.compress:
            caps.append("COMPRESS=DEFLATE")
        if self.state is State.NOT_AUTHENTICATED:
            if self.server.tls_context is not None and not self.tls:
                caps.append("STARTTLS")
            caps.append("AUTH=PLAIN" if self.auth_allowed else "LOGINDISABLED")
        return caps

    # -- the connection ----------------------------------------------------------------------------
    async def run(self) -> None:
        with mdc(**self._mdc()):
            try:
                if await self._refused():
                    return
                await self.send(b"* OK [CAPABILITY " + " ".join(self.capabilities()).encode() + b"] "
                                + self.config.software_name.encode() + b" ready\r\n")
                await self._loop()
            except Bye as exc:
                await self._bye(str(exc))
            except (ConnectionClosed, ConnectionError):
                pass
            except Exception:
                log.exception("IMAP session failed")
                await self._bye("Internal error, closing connection")
            finally:
                self.close()

    async def _refused(self) -> bool:
        server = self.server
        over = server.caps.over(self.ip)
        if over is not None:
            server.count("imapConnectionsRefused")
            log.info("IMAP connection refused: too many connections (%d, %d from %s)", server.caps.count(),
                     server.caps.count(self.ip), self.ip)
            await self._bye("[UNAVAILABLE] Too many connections from your address, try again later"
                            if over is Over.ADDRESS else "[UNAVAILABLE] Too many connections, try again later")
            return True
        if server.maintenance is not None:
            try:
                in_maintenance = await self.blocking(server.maintenance)
            except Exception:
                log.warning("cannot read the maintenance mode state", exc_info=True)
                in_maintenance = False
            if in_maintenance:
                server.count("imapConnectionsRefused")
                log.info("IMAP connection refused: maintenance mode")
                await self._bye("[UNAVAILABLE] Service temporarily unavailable for maintenance")
                return True
        return False

    async def _bye(self, text: str) -> None:
        try:
            await asyncio.wait_for(self.send(b"* BYE " + text.encode() + b"\r\n"), 5)
        except (ConnectionError, TimeoutError, RuntimeError):
            pass

    def close(self) -> None:
        self._drop_feed()
        if not self.writer.is_closing():
            self.writer.close()

    def describe(self) -> ConnectionDescription:
        """James's IMAP channel description (``protocolSpecificInformation`` as strings)."""
        specific = {"isIdling": str(self.idling).lower(), "requestCount": str(self.request_count),
                    "isCompressed": str(self.deflater is not None).lower()}
        if self.user is not None:
            specific["loggedInUser"] = self.user.value
        if self.selected is not None:
            specific["selectedMailbox"] = str(self.selected.mailbox.id)
        open_ = not self.writer.is_closing()
        return ConnectionDescription("IMAP", "imapserver", self.ip, self.connected_at, is_active=open_,
                                     is_open=open_, is_writable=open_, is_encrypted=self.tls,
                                     username=self.user.value if self.user else None, protocol_specific=specific)

    async def _loop(self) -> None:
        while self.state is not State.LOGOUT:
            try:
                segments = await asyncio.wait_for(self.commands.read_command(), self.idle_timeout)
            except TimeoutError:
                raise self.idle_bye() from None
            except NonSyncLiteralRefused as exc:   # RFC 7888 section 4: never read its octets as commands
                self.server.count("imapCommandsBad")
                await self.send(f"{exc.tag or '*'} BAD [TOOBIG] {exc}\r\n".encode())
                raise Bye("Refused non-synchronizing literal; closing the connection") from None
            except OverlongLineUnskipped as exc:   # compressed: skipping it would inflate without bound
                self.server.count("imapCommandsBad")
                await self.send(f"{exc.tag or '*'} BAD [TOOBIG] {exc}\r\n".encode())
                raise Bye("Overlong command line in a compressed stream; closing the connection") from None
            except LineTooLong as exc:
                self.server.count("imapCommandsBad")
                await self.send(f"{exc.tag or '*'} BAD [TOOBIG] {exc}\r\n".encode())
                continue
            except LiteralTooLarge as exc:
                self.server.count("imapCommandsBad")
                if exc.command == "APPEND":
                    await self.send(f"{exc.tag or '*'} NO [TOOBIG] {exc}\r\n".encode())
                else:
                    await self.send(f"{exc.tag or '*'} BAD [TOOBIG] {exc}\r\n".encode())
                continue
            self.request_count += 1
            try:
                command = parse_command(segments)
            except ParseError as exc:
                self.server.count("imapCommandsBad")
                tag = getattr(exc, "tag", None) or "*"
                await self.send(f"{tag} BAD {exc}\r\n".encode())
                continue
            try:
                with mdc(**self._mdc()):
                    await self.dispatch(command)
            finally:
                command.close()

    async def dispatch(self, command: Command) -> None:
        entry = COMMANDS.get(command.name)
        if entry is None:
            self.server.count("imapCommandsBad")
            await self.send(f"{command.tag} BAD Unknown command {command.name}\r\n".encode())
            return
        method, states = entry
        if self.state not in states:
            self.server.count("imapCommandsBad")
            await self.send(f"{command.tag} BAD {command.name} is not valid in the {self.state.value} state\r\n"
                            .encode())
            return
        task = asyncio.current_task()
        if task is not None:   # what the stall watchdog names if this command holds the loop (never its arguments)
            task.set_name(f"IMAP session {self.session_id} {command.tag} {command.name}")
        with self.server.timed(command.name):
            status = await self._run(command, method)
        if status is None:   # the handler answered itself (STARTTLS)
            return
        if status.startswith("BAD"):
            self.server.count("imapCommandsBad")
        elif status.startswith("NO"):
            self.server.count("imapCommandsNo")
        # One line whatever a message quotes (a mailbox name, James's "forbidden characters %*\r\n").
        await self.send(f"{command.tag} {printable(self._public(status))}\r\n".encode())
        if self.state is State.LOGOUT:
            self.close()

    def _public(self, status: str) -> str:
        """``status`` naming the user's mailboxes as the client does, not by their stored paths."""
        if self.user is None:
            return status
        inbox = MailboxPath.inbox(self.user)
        return status.replace(inbox.as_string().removesuffix(inbox.name), "")

    async def _run(self, command: Command, method: str) -> str | None:
        try:
            status = await getattr(self, method)(command, Args(command.args))
            if self.selected is not None and status is not None and status.startswith("OK") and \
                    self.state is State.SELECTED:
                await self._refresh(expunges=command.name not in NO_EXPUNGE_DURING)
            return status
        except ParseError as exc:
            return f"BAD {exc}"
        except No as exc:
            return f"NO [{exc.code}] {exc}" if exc.code else f"NO {exc}"
        except BadCharset as exc:
            return f"NO [BADCHARSET (UTF-8 US-ASCII)] charset {exc} is not supported"
        except (MaintenanceMode, PreDeletionHookFailed) as exc:   # the vault down: nothing was deleted
            return f"NO [UNAVAILABLE] {exc}"
        except MailboxNotFound as exc:
            return f"NO [NONEXISTENT] {exc}"
        except MailboxExists as exc:
            return f"NO [ALREADYEXISTS] {exc}"
        except (MailboxHasChildren, InboxCannotBeRenamedOrDeleted, InvalidMailboxName) as exc:
            return f"NO [CANNOT] {exc}"
        except OverQuota as exc:
            return f"NO [OVERQUOTA] {exc}"
        except MalformedMessage as exc:
            return f"NO [PARSE] malformed message: {exc}"
        except ConcurrentModification as exc:
            return f"NO [INUSE] {exc}; try again"
        except (Bye, ConnectionClosed, ConnectionError):
            raise
        except Exception:
            log.exception("IMAP %s failed", command.name)
            return f"NO [SERVERBUG] {command.name} failed on the server; see its log (session {self.session_id})"

    async def _refresh(self, *, expunges: bool) -> None:
        """Untagged updates of the selected mailbox: from the events the bus pushed since the last
        command (no storage read, but for the metadata of new messages), or, when the bus may have
        lost some, from storage (one state read; the listing when the state changed)."""
        selected = self.selected
        assert selected is not None
        feed = self.feed
        pushed = feed is not None and feed.trusted
        if feed is not None and pushed:
            events = feed.drain()
            if events and not await self._take_events(selected, events):
                self.selected, self.state = None, State.AUTHENTICATED
                self._drop_feed()
                raise Bye("The selected mailbox was deleted")
        else:
            await self._resync(selected)
        # UID only once CONDSTORE is on (QRESYNC turns it on), where RFC 7162 requires it; James leaves it out.
        lines = selected.report(expunges=expunges, with_uid=self.condstore, with_modseq=self.condstore,
                                vanished=self.qresync)
        # Messages that arrived while selected are this session's \Recent ones: claim them.
        arrived, selected.arrived_recent = selected.arrived_recent, []
        if arrived:
            await self.blocking(self._claim_recent, selected, arrived, read_state=not pushed)
        if lines:
            await self.queue(b"".join(lines))

    async def _take_events(self, selected: SelectedMailbox, events: list[MailboxEvent]) -> bool:
        """Note the events' changes in ``selected``; False when the mailbox was deleted."""
        added: list[int] = []
        for event in events:
            if isinstance(event, Added):
                added += [m.uid for m in event.added]
            elif isinstance(event, Expunged):
                selected.note_expunged(m.uid for m in event.expunged)
            elif isinstance(event, FlagsUpdated):
                selected.note_flags(event.updated)
            elif isinstance(event, MailboxRenamed):
                selected.path = event.new_path
            elif isinstance(event, MailboxDeletion):
                return False
        new = [u for u in added if selected.is_new(u)]
        if new:   # the events lack the blob ids FETCH needs: read those messages only
            fresh = await self.blocking(self.manager.get_messages, selected.path, min(new), max(new))
            selected.note_added(m for m in fresh if m.uid in set(new))
        return True

    async def _resync(self, selected: SelectedMailbox) -> None:
        """Read the mailbox's state, and its listing when the state changed (the bus may have lost events)."""
        if self.feed is not None:
            self.feed.resynced()   # before the reads: what comes after them arrives as events again
        try:
            state = await self.blocking(self.manager.mailbox_state, selected.path)
        except MailboxNotFound:
            renamed = await self._follow_rename(selected)
            if renamed is None:
                self.selected, self.state = None, State.AUTHENTICATED
                self._drop_feed()
                raise Bye("The selected mailbox was deleted") from None
            state = await self.blocking(self.manager.mailbox_state, selected.path)
        if state == selected.state and selected.state_exact:
            return
        fresh = await self.blocking(self.manager.get_messages, selected.path)
        selected.apply(fresh, state)

    def _listen(self, mailbox_id: MailboxId) -> MailboxFeed | None:
        bus = self.server.bus
        if bus is None:
            return None
        feed = MailboxFeed(bus, mailbox_id, self.loop)
        feed.start()
        return feed

    def _drop_feed(self) -> None:
        """Stop the selected mailbox's events (the broker's unbind runs on a pool thread)."""
        feed, self.feed = self.feed, None
        if feed is None:
            return
        try:
            asyncio.get_running_loop().run_in_executor(None, feed.stop)
        except RuntimeError:   # no loop any more: the server stopped
            feed.stop()

    async def _follow_rename(self, selected: SelectedMailbox) -> MailboxPath | None:
        try:
            mailbox = await self.blocking(self.manager.get_mailbox_by_id, selected.mailbox.id)
        except MailboxNotFound:
            return None
        selected.path = mailbox.path
        return mailbox.path

    # -- any state ---------------------------------------------------------------------------------
    async def cmd_capability(self, command: Command, args: Args) -> str:
        args.end()
        await self.send(b"* CAPABILITY " + " ".join(self.capabilities()).encode() + b"\r\n")
        return "OK CAPABILITY completed"

    async def cmd_noop(self, command: Command, args: Args) -> str:
        args.end()
        return "OK NOOP completed"

    async def cmd_logout(self, command: Command, args: Args) -> str:
        args.end()
        await self.send(b"* BYE Logging out\r\n")
        self.state = State.LOGOUT
        return "OK LOGOUT completed"

    async def cmd_id(self, command: Command, args: Args) -> str:
        args.rest()
        await self.send(b'* ID ("name" ' + quoted(self.config.software_name) + b")\r\n")
        return "OK ID completed"

    async def cmd_enable(self, command: Command, args: Args) -> str:
        enabled: list[str] = []
        was_condstore = self.condstore
        for token in args.rest():
            name = str(token).upper()
            if name in ("CONDSTORE", "QRESYNC") and name not in enabled:
                self.condstore = True   # QRESYNC implies CONDSTORE (RFC 7162 3.2.3)
                self.qresync = self.qresync or name == "QRESYNC"
                enabled.append(name)
        await self.send(("* ENABLED" + "".join(" " + e for e in enabled) + "\r\n").encode())
        if self.selected is not None and self.condstore and not was_condstore:
            # A CONDSTORE-enabling command with a mailbox selected tells its HIGHESTMODSEQ (RFC 7162 3.1), as James.
            await self.send(b"* OK [HIGHESTMODSEQ %d] Highest\r\n" % max(1, self.selected.state.highest_modseq))
        return "OK ENABLE completed"

    async def cmd_compress(self, command: Command, args: Args) -> str | None:
        """RFC 4978: answer OK uncompressed, then raw DEFLATE both ways (the client's next octets included)."""
        mechanism = args.atom("compression mechanism").upper()
        args.end()
        if not self.config.compress:   # as James with compress off: a command it does not know
            return f"BAD Unknown command {command.name}"
        if self.deflater is not None:
            return "NO [COMPRESSIONACTIVE] DEFLATE is already active"
        tls = self.writer.get_extra_info("ssl_object")
        if tls is not None and tls.compression() is not None:
            return "NO [COMPRESSIONACTIVE] TLS compression is active"
        if mechanism != "DEFLATE":
            return f"BAD Unsupported compression mechanism {mechanism}"
        await self.send(f"{command.tag} OK DEFLATE active\r\n".encode())
        self.deflater = Deflater()
        self.commands.reader = InflatingReader(self.reader, self.config.max_line_length + 2)
        self.commands.skips_overlong_lines = False
        return None

    # -- not authenticated -------------------------------------------------------------------------
    async def cmd_starttls(self, command: Command, args: Args) -> str | None:
        args.end()
        context = self.server.tls_context
        if context is None or self.tls:
            return "BAD STARTTLS is not available" if context is None else "BAD TLS is already active"
        await self.send(f"{command.tag} OK Begin TLS negotiation now\r\n".encode())
        if self.reader._buffer:   # type: ignore[attr-defined]  # input sent before the handshake: injection attempt
            raise Bye("Commands sent before the TLS handshake")
        await self.writer.start_tls(context)
        self.tls = True
        return None

    async def cmd_login(self, command: Command, args: Args) -> str:
        name, password = args.astring("user name"), args.astring("password")
        args.end()
        if not self.auth_allowed:
            return "NO [PRIVACYREQUIRED] LOGIN is disabled before STARTTLS"
        return await self._authenticate("LOGIN", name, password)

    async def cmd_authenticate(self, command: Command, args: Args) -> str:
        # RFC 3501's auth-type is an atom; James also takes a quoted or literal name, and so do we.
        mechanism = args.astring("mechanism").upper()
        initial = args.astring("initial response") if args.more() else None
        args.end()
        if mechanism != "PLAIN":
            return f"NO [CANNOT] Unsupported authentication mechanism {mechanism}"
        if not self.auth_allowed:
            return "NO [PRIVACYREQUIRED] Authentication is disabled before STARTTLS"
        if initial is None:
            await self.send(b"+ \r\n")
            try:
                line = await asyncio.wait_for(self.commands.read_line(), self.idle_timeout)
            except TimeoutError:
                raise self.idle_bye() from None
            if line.strip() == b"*":
                return "BAD Authentication cancelled"
            initial = line.decode("ascii", "replace").strip()
        try:
            raw = b"" if initial == "=" else base64.b64decode(initial, validate=True)
        except (binascii.Error, ValueError):
            return "BAD Invalid base64 in the SASL response"
        parts = raw.split(b"\x00")
        if len(parts) != 3:
            return "BAD Invalid SASL PLAIN message"
        authz, login, password = (p.decode("utf-8", "replace") for p in parts)
        if authz and authz.lower() != login.lower():
            return "NO [AUTHORIZATIONFAILED] Acting as another user is not supported"
        return await self._authenticate("AUTHENTICATE PLAIN", login, password)

    async def _authenticate(self, how: str, name: str, password: str) -> str:
        # The throttle may wait first (whatever the password), or refuse without checking it.
        async with self.server.auth_throttle.attempt("IMAP", name, self.ip) as attempt:
            if attempt.refused:
                return await self._auth_failed(how, name, f"NO [UNAVAILABLE] {attempt.refusal}")
            try:
                user = Username.of(name)
            except InvalidAddress:
                user = None
            ok = user is not None and self.server.users is not None and \
                await self.blocking(self.server.users.verify, user, password)
            (attempt.succeeded if ok else attempt.failed)()
        if not ok or user is None:
            return await self._auth_failed(how, name, "NO [AUTHENTICATIONFAILED] Authentication failed")
        self.user, self.state = user, State.AUTHENTICATED
        log.info("IMAP %s succeeded for %s", how, user.value)
        await self._provision_inbox()
        return "OK [CAPABILITY " + " ".join(self.capabilities()) + "] Authenticated"

    async def _auth_failed(self, how: str, name: str, reply: str) -> str:
        self.auth_failures += 1
        log.info("IMAP %s failed for %r: %s", how, name, reply)
        if self.auth_failures >= self.config.max_auth_failures:
            await self.send(b"* BYE Too many authentication failures\r\n")
            self.state = State.LOGOUT
        return reply

    async def _provision_inbox(self) -> None:
        """As James at IMAP login: create INBOX, subscribed, when the user has none yet."""
        assert self.user is not None
        user, inbox = self.user, MailboxPath.inbox(self.user)
        try:
            if not await self.blocking(self.manager.mailbox_exists, inbox):
                await self.blocking(self.manager.create_mailbox, inbox)
                await self.blocking(self.server.subscriptions.subscribe, user, INBOX)
        except (MailboxExists, MaintenanceMode):
            pass
        except Exception:
            log.warning("could not provision INBOX for %s", self.user.value, exc_info=True)

    # -- IDLE (RFC 2177) ----------------------------------------------------------------------------
    async def cmd_idle(self, command: Command, args: Args) -> str:
        args.end()
        if self.selected is not None:
            await self._refresh(expunges=True)
        await self.send(b"+ idling\r\n")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.idle_timeout
        line_task = asyncio.ensure_future(self.commands.read_line())
        self.idling = True
        try:
            while True:
                selected = self.selected
                change = None
                waiting: set[asyncio.Future] = {line_task}
                timeout = deadline - loop.time()
                if selected is not None:
                    feed = self.feed
                    if feed is not None and feed.trusted:
                        # The events come to the feed, and so does the bus's notice that it lost some.
                        change = asyncio.ensure_future(feed.arrived.wait())
                    else:   # degraded: no trusted feed (the bus is down or lost events)
                        change = asyncio.ensure_future(self.server.watcher.wait(selected.mailbox.id, selected.path,
                                                                                selected.state))
                    waiting.add(change)
                done, _ = await asyncio.wait(waiting, timeout=max(0.0, timeout), return_when=asyncio.FIRST_COMPLETED)
                if change is not None and change not in done:
                    change.cancel()
                if line_task in done:
                    line = line_task.result()
                    if line.strip().upper() != b"DONE":
                        raise ParseError("IDLE ends with DONE")
                    return "OK IDLE terminated"
                if change is not None and change in done:
                    try:
                        await self._refresh(expunges=True)
                        await self.drain()   # idling: no tagged response to carry the updates
                    except (Bye, ConnectionError):
                        raise
                    except Exception as exc:
                        log.info("IDLE refresh failed: %s", exc)
                    continue
                raise Bye("Autologout; idle for too long")
        finally:
            self.idling = False
            if not line_task.done():
                line_task.cancel()
