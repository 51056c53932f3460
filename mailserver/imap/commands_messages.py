"""Commands of the selected state: CHECK, CLOSE, UNSELECT, EXPUNGE, UID EXPUNGE, SEARCH, FETCH,
STORE, COPY, MOVE and their UID forms (a mixin of ``Session``). Message numbers are mapped to
uids with the session's own map (``selected.py``); the mailbox manager only sees uids.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, BinaryIO, TypeVar

from mailserver.blob.api import BlobNotFound
from mailserver.imap.commands_mailboxes import parse_flags
from mailserver.imap.esearch import esearch_response, split_return_options
from mailserver.imap.fetch import Attribute, Content, FetchRequest, StreamSlice, parse_request, render
from mailserver.imap.parser import Args, Command, ParseError
from mailserver.imap.qresync import check_vanished, fetch_vanished
from mailserver.imap.response import number
from mailserver.imap.search import Candidate, Query, parse_query
from mailserver.imap.sequence import SequenceSet, format_set
from mailserver.imap.session_base import Bye, No, SessionBase, State
from mailserver.mailbox.errors import MailboxNotFound, MessageNotFound
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import Mailbox, MailboxPath
from mailserver.model.message import MessageMetadata

if TYPE_CHECKING:
    from mailserver.imap.selected import SelectedMailbox

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
HEADER_BATCH = 100   # messages rendered in one pool call when a FETCH needs no body
_GONE = (MessageNotFound, BlobNotFound)
T = TypeVar("T")


class MessageCommands(SessionBase):
    def _sel(self) -> SelectedMailbox:
        assert self.selected is not None
        return self.selected

    async def _targets(self, command: Command, args: Args) -> list[int]:
        """The uids a command's sequence set names (by uid for UID commands).

        A number beyond the messages this session knows may name one another session just added:
        as James, learn of the additions first (their EXISTS goes out before the reply; no EXPUNGE,
        which RFC 3501 7.4.1 forbids here), then resolve the set."""
        selected = self._sel()
        seqset = SequenceSet.parse(args.atom("sequence set"))
        if command.name.startswith("UID "):
            return seqset.uids(selected.uids)
        if not seqset.fits(selected.exists):
            await self._refresh(expunges=False)
            selected = self._sel()
        return [selected.uid_at(seq) for seq in seqset.sequence_numbers(selected.exists)]

    def _flags_target(self, selected: SelectedMailbox) -> Mailbox | MailboxPath:
        """Where a flag update of the selected mailbox goes: the mailbox itself, not looked up again,
        while its events are trusted (its deletion would be among them), else its path."""
        feed = self.feed
        if feed is None or not feed.trusted:
            return selected.path
        if feed.deletion_pending():
            raise MailboxNotFound(selected.path)
        return selected.current_mailbox

    def _writable(self) -> None:
        if self._sel().read_only:
            raise No("the mailbox is selected read-only (EXAMINE)", "READ-ONLY")

    # -- CHECK / CLOSE / UNSELECT / EXPUNGE -------------------------------------------------------------
    async def cmd_check(self, command: Command, args: Args) -> str:
        args.end()
        return "OK CHECK completed"

    async def _deselect(self) -> None:
        self.selected, self.state = None, State.AUTHENTICATED
        self._drop_feed()

    async def cmd_close(self, command: Command, args: Args) -> str:
        args.end()
        selected = self._sel()
        await self._deselect()
        if not selected.read_only:   # silently: no EXPUNGE responses after CLOSE
            expunged = await self.blocking(self.manager.expunge, selected.path)
            if expunged:
                self.server.watcher.changed(selected.mailbox.id)
        return "OK CLOSE completed"

    async def cmd_unselect(self, command: Command, args: Args) -> str:
        args.end()
        await self._deselect()
        return "OK UNSELECT completed"

    async def cmd_expunge(self, command: Command, args: Args) -> str:
        args.end()
        return await self._expunge(None)

    async def cmd_uid_expunge(self, command: Command, args: Args) -> str:
        uids = await self._targets(command, args)
        args.end()
        return await self._expunge(uids)

    async def _expunge(self, uids: list[int] | None) -> str:
        self._writable()
        selected = self._sel()
        if uids is not None and not uids:
            return "OK EXPUNGE completed"
        expunged = await self.blocking(self.manager.expunge, selected.path, uids)
        selected.gone |= set(expunged) & set(selected.uids)
        if expunged:
            self.server.watcher.changed(selected.mailbox.id)
        if expunged and self.qresync:   # RFC 7162 3.2.7, as James: the mailbox's HIGHESTMODSEQ after the expunge
            state = await self.blocking(self.manager.mailbox_state, selected.path)
            return f"OK [HIGHESTMODSEQ {max(1, state.highest_modseq)}] EXPUNGE completed"
        return "OK EXPUNGE completed"   # the EXPUNGE responses come with the refresh before this

    # -- SEARCH -------------------------------------------------------------------------------------------
    async def cmd_search(self, command: Command, args: Args) -> str:
        options, criteria = split_return_options(args.rest())
        query = parse_query(criteria)
        by_uid = command.name == "UID SEARCH"
        found = await self.blocking(self._matcher(query, lambda c: (c.seq, c.meta.uid, c.meta.mod_seq)))
        await self._modseq_query_seen(query)
        numbers = [uid if by_uid else seq for seq, uid, _ in found]
        highest = max(m for _, _, m in found) if query.modseq and found else None
        if options is not None:
            await self.queue(esearch_response(command.tag, by_uid=by_uid, options=options, numbers=numbers,
                                             modseq=highest))
            return "OK SEARCH completed"
        line = b"* SEARCH" + b"".join(b" " + number(n) for n in numbers)
        if highest is not None:
            line += b" (MODSEQ " + number(highest) + b")"
        await self.queue(line + b"\r\n")
        return "OK SEARCH completed"

    def _matcher(self, query: Query, keep: Callable[[Candidate], T]) -> Callable[[], list[T]]:
        """On the loop, the selected messages as they are now; the function returned, blocking
        (it reads headers and bodies as the query needs), gives what ``keep`` takes of each one the
        query matches, in mailbox order. Only that is kept, so SORT holds a large mailbox's sort
        values, not its parsed headers. A message expunged meanwhile is no match."""
        selected = self._sel()
        uids = list(selected.uids)
        largest_uid = uids[-1] if uids else 0

        def evaluate() -> list[T]:
            kept = []
            for seq, uid in enumerate(uids, start=1):
                meta = selected.known[uid]
                candidate = Candidate(meta, seq, self._content(meta), uid in selected.recent, len(uids), largest_uid)
                try:
                    if query.predicate(candidate):
                        kept.append(keep(candidate))
                except _GONE:
                    continue
            return kept

        return evaluate

    async def _modseq_query_seen(self, query: Query) -> None:
        """A MODSEQ search key enables CONDSTORE (RFC 7162 3.1); the first time with a mailbox
        selected, the session tells its HIGHESTMODSEQ, as James does."""
        if query.modseq and not self.condstore:
            self.condstore = True
            await self.send(b"* OK [HIGHESTMODSEQ %d] Highest\r\n" % max(1, self._sel().state.highest_modseq))

    def _content(self, meta: MessageMetadata) -> Content:
        manager = self.manager
        return Content(meta, self.server.read_header, lambda m: manager.read_message(m.message_id),
                       self.server.headers.envelope)

    def _render_each(self, items: list[tuple[MessageMetadata, int, bool]],
                     request: FetchRequest) -> list[list[bytes | StreamSlice] | None]:
        """Blocking: the FETCH response of each (message, seq, recent); None for one gone meanwhile.
        Slices of a chunk or less are read here (one pool call for the message, not four)."""
        out: list[list[bytes | StreamSlice] | None] = []
        for meta, seq, recent in items:
            try:
                pieces = render(meta, seq, request, self._content(meta), recent=recent)
                out.append([self._read_slice(p) if isinstance(p, StreamSlice) and p.length <= CHUNK else p
                            for p in pieces])
            except _GONE:
                out.append(None)
        return out

    def _read_slice(self, piece: StreamSlice) -> bytes:
        """Blocking: octets [start, start + length) of a message, as ``_stream`` would write them."""
        with self._open_message(piece.message) as stream:
            if piece.start:
                stream.read(piece.start)
            data = stream.read(piece.length)
        if len(data) < piece.length:
            log.error("message %s is shorter than its recorded size %d", piece.message.message_id, piece.message.size)
            raise Bye("Internal error: message content shorter than announced")
        return data

    def _open_message(self, meta: MessageMetadata) -> BinaryIO:
        """Blocking: the message as a stream, its header from the server's header cache, so that a
        body FETCH reads one blob (the body) once the header is known."""
        return self.manager.open_message(meta.message_id, header=self.server.read_header(meta))

    # -- FETCH ----------------------------------------------------------------------------------------
    async def cmd_fetch(self, command: Command, args: Args) -> str:
        uid_set = args.peek()
        uids = await self._targets(command, args)
        request = parse_request(args.rest())
        selected = self._sel()
        if request.vanished:
            check_vanished(command.name, request, qresync=self.qresync)
            await self.send(b"".join(fetch_vanished(selected, SequenceSet.parse(str(uid_set)))))
        if command.name == "UID FETCH" or self.qresync:   # QRESYNC: every FETCH says UID (RFC 7162 3.2.4)
            request = request.with_uid()
        if request.changed_since is not None:
            self.condstore = True
            uids = [u for u in uids if selected.known[u].mod_seq > request.changed_since]
        if self.condstore and any(a.name == "FLAGS" for a in request.attributes):
            request = request.with_modseq()
        if request.sets_seen and not selected.read_only:
            unseen = [u for u in uids if u not in selected.gone and not selected.known[u].flags.has(SystemFlag.SEEN)]
            if unseen:
                updates = await self.blocking(self.manager.set_flags, self._flags_target(selected),
                                              Flags.of(SystemFlag.SEEN), FlagsUpdateMode.ADD, unseen,
                                              known=selected.known)
                selected.flags_updated(updates)
                self.server.watcher.changed(selected.mailbox.id)
                if not any(a.name == "FLAGS" for a in request.attributes):
                    # First, as James does: a client reading the reply in order learns of \\Seen before the body.
                    request = FetchRequest([Attribute("FLAGS"), *request.attributes], request.changed_since)
        meta_only = all(a.need == "meta" for a in request.attributes)
        # Headers are small: the messages of a header-only FETCH are rendered HEADER_BATCH to a pool
        # call (one thread hand-off, not one a message); bodies one by one, to hold one at a time.
        batch = HEADER_BATCH if all(a.need in ("meta", "header") for a in request.attributes) else 1
        missing = False
        for start in range(0, len(uids), batch):
            items = []
            for uid in uids[start:start + batch]:
                seq = selected.seq_of(uid)
                assert seq is not None
                items.append((selected.known[uid], seq, uid in selected.recent))
            rendered = self._render_each(items, request) if meta_only \
                else await self.blocking(self._render_each, items, request)
            written: list[bytes] = []   # responses without a stream, written together (one send)
            for pieces in rendered:
                if pieces is not None and all(isinstance(p, bytes) for p in pieces):
                    written.extend(pieces)   # type: ignore[arg-type]
                    continue
                if written:
                    await self.queue(b"".join(written))
                    written = []
                if pieces is None or not await self._write_fetched(pieces):
                    missing = True
            if written:
                await self.queue(b"".join(written))
        if missing:
            raise No("some of the requested messages no longer exist", "EXPUNGEISSUED")
        return "OK FETCH completed"

    async def _write_fetched(self, pieces: list[bytes | StreamSlice]) -> bool:
        """One message's FETCH response: its bytes, and its streamed parts from the blob store;
        False, writing nothing, when its content is gone."""
        streams = {}
        try:
            for piece in pieces:   # opened before anything of this message is written: a miss costs nothing
                if isinstance(piece, StreamSlice):
                    streams[id(piece)] = await self.blocking(self._open_message, piece.message)
        except _GONE:
            for stream in streams.values():
                await self.blocking(stream.close)
            return False
        for piece in pieces:
            if isinstance(piece, bytes):
                self.write(piece)
            else:
                await self._stream(piece, streams[id(piece)])
        await self.drain()
        return True

    async def _stream(self, piece: StreamSlice, stream: BinaryIO) -> None:
        """Write octets [start, start + length) of a message from the blob store, chunk by chunk."""
        try:
            skip = piece.start
            while skip:
                skipped = await self.blocking(stream.read, min(CHUNK, skip))
                if not skipped:
                    break
                skip -= len(skipped)
            remaining = piece.length
            while remaining:
                chunk = await self.blocking(stream.read, min(CHUNK, remaining))
                if not chunk:
                    break
                self.write(chunk)
                await self.drain()
                remaining -= len(chunk)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:   # the literal's size is already announced: the stream cannot be repaired
            log.exception("streaming message %s failed", piece.message.message_id)
            raise Bye("Internal error while sending a message") from exc
        finally:
            await self.blocking(stream.close)
        if remaining or skip:
            log.error("message %s is shorter than its recorded size %d", piece.message.message_id, piece.message.size)
            raise Bye("Internal error: message content shorter than announced")

    # -- STORE --------------------------------------------------------------------------------------------
    async def cmd_store(self, command: Command, args: Args) -> str:
        uids = await self._targets(command, args)
        unchanged_since = None
        modifiers = args.optional_list()
        if modifiers is not None:
            if len(modifiers) != 2 or str(modifiers[0]).upper() != "UNCHANGEDSINCE" or not str(modifiers[1]).isdigit():
                raise ParseError("STORE modifier must be (UNCHANGEDSINCE n)")
            unchanged_since = int(modifiers[1])
            self.condstore = True
        item = args.atom("STORE item").upper()
        base, silent = (item[:-7], True) if item.endswith(".SILENT") else (item, False)
        modes = {"FLAGS": FlagsUpdateMode.REPLACE, "+FLAGS": FlagsUpdateMode.ADD, "-FLAGS": FlagsUpdateMode.REMOVE}
        if base not in modes:
            raise ParseError(f"unknown STORE item {item}")
        rest = args.rest()
        flags = parse_flags(rest[0] if len(rest) == 1 and isinstance(rest[0], list) else rest)
        self._writable()
        selected = self._sel()
        by_uid = command.name == "UID STORE"
        uids = [u for u in uids if u not in selected.gone]
        modified: list[int] = []
        if unchanged_since is not None and uids:
            # The span of the targeted uids, not the whole mailbox.
            fresh = await self.blocking(self.manager.get_messages, selected.path, min(uids), max(uids))
            current = {m.uid: m.mod_seq for m in fresh}
            modified = [u for u in uids if current.get(u, 0) > unchanged_since]
            uids = [u for u in uids if u not in modified]
        if uids:
            # The session's copies of the messages: no row read (the compare-and-set re-reads a stale one).
            updates = await self.blocking(self.manager.set_flags, self._flags_target(selected), flags, modes[base],
                                          uids, known=selected.known)
            selected.flags_updated(updates)
            if updates:
                self.server.watcher.changed(selected.mailbox.id)
        lines = selected.announce_keywords(uids)
        if not silent:
            lines += [selected.fetch_flags(selected.known[u], with_uid=by_uid or self.qresync,
                                           with_modseq=self.condstore) for u in uids if u in selected.known]
        await self.queue(b"".join(lines))
        if modified:
            names = modified if by_uid else [selected.seq_of(u) or 0 for u in modified]
            return f"OK [MODIFIED {format_set(names)}] Conditional STORE failed for some messages"
        return "OK STORE completed"

    # -- COPY / MOVE ----------------------------------------------------------------------------------------
    async def cmd_copy(self, command: Command, args: Args) -> str:
        return await self._copy(command, args, move=False)

    async def cmd_move(self, command: Command, args: Args) -> str:
        return await self._copy(command, args, move=True)

    async def _copy(self, command: Command, args: Args, *, move: bool) -> str:
        uids = await self._targets(command, args)
        name = self._name(args)
        args.end()
        if move:
            self._writable()
        selected = self._sel()
        uids = [u for u in uids if u not in selected.gone]
        target = self.path(name)
        verb = "MOVE" if move else "COPY"
        if not uids:
            return f"OK {verb} completed (nothing to do)"

        def run() -> tuple[int, list[int], MailboxId]:
            try:
                destination = self.manager.get_mailbox(target)
            except MailboxNotFound:
                raise No(f"mailbox {name} does not exist", "TRYCREATE") from None
            copies = (self.manager.move if move else self.manager.copy)(selected.path, target, uids)
            return destination.uid_validity, [c.uid for c in copies], destination.id

        uid_validity, new_uids, destination_id = await self.blocking(run)
        self.server.watcher.changed(destination_id)
        code = f"COPYUID {uid_validity} {format_set(uids)} {format_set(new_uids)}" \
            if len(new_uids) == len(uids) else None
        if not move:
            return f"OK [{code}] COPY completed" if code else "OK COPY completed"
        selected.moved_out(uids)
        self.server.watcher.changed(selected.mailbox.id)
        if code:   # RFC 6851: COPYUID goes in an untagged OK, before the EXPUNGE responses
            await self.send(f"* OK [{code}] Moved\r\n".encode())
        return "OK MOVE completed"
