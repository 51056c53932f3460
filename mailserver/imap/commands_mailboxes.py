"""Commands of the authenticated state about mailboxes: SELECT, EXAMINE, CREATE, DELETE, RENAME,
SUBSCRIBE, UNSUBSCRIBE, LIST (with LIST-EXTENDED, SPECIAL-USE, LIST-STATUS), LSUB, STATUS, NAMESPACE,
APPEND (a mixin of ``Session``)."""

from __future__ import annotations

import logging
from typing import Any

from mailserver.imap.list_request import parse_list
from mailserver.imap.listing import Entry, list_entries, lsub_entries
from mailserver.imap.mailbox_feed import MailboxFeed
from mailserver.imap.names import InvalidName, ListPattern, encode_mutf7, normalize
from mailserver.imap.parser import Args, Atom, Command, Literal, ParseError
from mailserver.imap.qresync import parse_select_params, select_resync
from mailserver.imap.response import astring, number, parse_date_time
from mailserver.imap.selected import SelectedMailbox
from mailserver.imap.session_base import No, SessionBase, State
from mailserver.imap.status_items import parse_status_items
from mailserver.mailbox.errors import MailboxNotFound, MaintenanceMode
from mailserver.model.flags import Flags, FlagsUpdateMode, SystemFlag
from mailserver.model.mailbox import DELIMITER, INBOX, MailboxPath
from mailserver.model.message import MessageMetadata

log = logging.getLogger(__name__)

_SYSTEM = {f"\\{flag.value.upper()}": flag for flag in SystemFlag}


def parse_flags(tokens: list[Any]) -> Flags:
    """Flags of STORE and APPEND; ``\\Recent`` is dropped (only the server sets it)."""
    system: set[SystemFlag] = set()
    user: set[str] = set()
    for token in tokens:
        if not isinstance(token, Atom) or not token:
            raise ParseError(f"invalid flag {token!r}")
        if token.startswith("\\"):
            flag = _SYSTEM.get(token.upper())
            if flag is None:
                raise ParseError(f"unknown system flag {token}")
            if flag is not SystemFlag.RECENT:
                system.add(flag)
        elif any(c in token for c in "[]*%\\"):
            raise ParseError(f"invalid keyword {token}")
        else:
            user.add(str(token))
    return Flags(frozenset(system), frozenset(user))


def wire_name(name: str) -> bytes:
    return astring(encode_mutf7(name))


class MailboxCommands(SessionBase):
    def _name(self, args: Args, what: str = "mailbox name") -> str:
        try:
            return normalize(args.astring(what))
        except InvalidName as exc:
            raise ParseError(str(exc)) from None

    # -- SELECT / EXAMINE ----------------------------------------------------------------------------
    async def cmd_select(self, command: Command, args: Args) -> str:
        return await self._select(args, read_only=False)

    async def cmd_examine(self, command: Command, args: Args) -> str:
        return await self._select(args, read_only=True)

    async def _select(self, args: Args, *, read_only: bool) -> str:
        name = self._name(args)
        params = parse_select_params(args.optional_list())
        args.end()
        if params.resync is not None and not self.qresync:
            raise ParseError("QRESYNC is not enabled")   # RFC 7162 3.2.5: tagged BAD
        if params.condstore:
            self.condstore = True
        path = self.path(name)
        if self.selected is not None and self.qresync:   # RFC 7162 3.2.11: the old mailbox's responses end here
            await self.send(b"* OK [CLOSED] Previous mailbox is now closed\r\n")
        previous = self.selected or self.left_by_failed_select
        feed, self.feed = self.feed, None
        self.selected, self.state = None, State.AUTHENTICATED   # a failed SELECT leaves none selected
        self.left_by_failed_select = previous
        try:
            selected, self.feed = await self.blocking(self._open, path, read_only, feed)
        finally:
            if self.feed is None and feed is not None:
                self.feed = feed
                self._drop_feed()
        self.left_by_failed_select = None
        if previous is not None:
            selected.keep_recent(previous)
        status = await self._selected(selected, read_only)
        if params.resync is not None:
            await self.queue(b"".join(select_resync(selected, params.resync)))
        return status

    async def _selected(self, selected: SelectedMailbox, read_only: bool) -> str:
        """Tell the SELECT/EXAMINE response of the mailbox now selected."""
        recent = len(selected.recent)
        # The order of RFC 3501's SELECT example, as James sends it.
        lines = [selected.flags_response(), b"* %d EXISTS\r\n" % selected.exists, b"* %d RECENT\r\n" % recent,
                 b"* OK [UIDVALIDITY %d] UIDs valid\r\n" % selected.mailbox.uid_validity]
        unseen = selected.first_unseen()
        if unseen is not None:
            lines.append(b"* OK [UNSEEN %d] First unseen message\r\n" % unseen)
        lines += [b"* OK [PERMANENTFLAGS ()] Flags permitted\r\n" if read_only else selected.permanent_flags_response(),
                  b"* OK [HIGHESTMODSEQ %d] Highest\r\n" % max(1, selected.state.highest_modseq),
                  b"* OK [UIDNEXT %d] Predicted next UID\r\n" % selected.state.uid_next]
        await self.queue(b"".join(lines))
        self.selected, self.state = selected, State.SELECTED
        return f"OK [{'READ-ONLY' if read_only else 'READ-WRITE'}] {'EXAMINE' if read_only else 'SELECT'} completed"

    def _open(self, path: MailboxPath, read_only: bool,
              feed: MailboxFeed | None) -> tuple[SelectedMailbox, MailboxFeed | None]:
        """Blocking: load the mailbox; a read-write SELECT takes the \\Recent flags (James does the same).

        Its events are listened to first (``feed``, the previous selection's, serves again for the
        same mailbox), so that a change made while it is read is not missed."""
        manager = self.manager
        mailbox = manager.get_mailbox(path)
        if feed is not None and feed.mailbox_id == mailbox.id:
            feed.resynced()
        else:
            if feed is not None:
                feed.stop()
            feed = self._listen(mailbox.id)
        try:
            state = manager.mailbox_state(mailbox)   # the mailbox just looked up: no second path lookup
            messages = manager.get_messages(mailbox)
            recent = [m.uid for m in messages if m.flags.has(SystemFlag.RECENT)]
            selected = SelectedMailbox(mailbox, path, read_only=read_only, messages=messages, state=state,
                                       recent=recent)
            self._claim_recent(selected, recent)
        except BaseException:
            if feed is not None:
                feed.stop()
            raise
        return selected, feed

    def _claim_recent(self, selected: SelectedMailbox, uids: list[int], *, read_state: bool = True) -> None:
        """Blocking: this session is told these messages are \\Recent, so no other session will be:
        the stored flag (Cassandra's mailboxRecents, shared by every node) is taken off, as James's
        read-write SELECT does. EXAMINE leaves it for the next session."""
        if not uids or selected.read_only:
            return
        try:
            selected.flags_updated(self.manager.set_flags(selected.path, Flags.of(SystemFlag.RECENT),
                                                          FlagsUpdateMode.REMOVE, uids))
            if read_state:   # else the state is the events' (the claim's own event changes nothing)
                selected.state = self.manager.mailbox_state(selected.path)
        except MaintenanceMode:
            pass   # stays \Recent for the next session: harmless

    # -- CREATE / DELETE / RENAME ---------------------------------------------------------------------
    async def cmd_create(self, command: Command, args: Args) -> str:
        name = self._name(args)
        args.end()
        await self.blocking(self.manager.create_mailbox, self.path(name))
        return "OK CREATE completed"

    async def cmd_delete(self, command: Command, args: Args) -> str:
        name = self._name(args)
        args.end()
        path = self.path(name)
        # Children stay: the name remains as a \\Noselect hierarchy level (RFC 3501 6.3.4), as in James.
        await self.blocking(self.manager.delete_mailbox, path, keep_children=True)
        if self.selected is not None and self.selected.path == path:
            self.selected, self.state = None, State.AUTHENTICATED   # James deselects; the session goes on
            self._drop_feed()
        return "OK DELETE completed"

    async def cmd_rename(self, command: Command, args: Args) -> str:
        source, target = self._name(args, "existing mailbox name"), self._name(args, "new mailbox name")
        args.end()
        source_path, target_path = self.path(source), self.path(target)
        if source == INBOX:   # RFC 3501 §6.3.5: INBOX's messages move to the new name, INBOX stays (empty)
            def move_inbox() -> None:
                self.manager.create_mailbox(target_path)
                uids = [m.uid for m in self.manager.get_messages(source_path)]
                if uids:
                    self.manager.move(source_path, target_path, uids)
            await self.blocking(move_inbox)
        else:
            await self.blocking(self.manager.rename_mailbox, source_path, target_path)
        return "OK RENAME completed"

    # -- subscriptions --------------------------------------------------------------------------------
    async def cmd_subscribe(self, command: Command, args: Args) -> str:
        name = self._name(args)
        args.end()
        assert self.user is not None
        # A name that is no mailbox (yet) may be subscribed, as with James and Dovecot: RFC 3501 6.3.6
        # only allows a check, and LIST (SUBSCRIBED) shows such a name \NonExistent (RFC 5258).
        await self.blocking(self.server.subscriptions.subscribe, self.user, name)
        return "OK SUBSCRIBE completed"

    async def cmd_unsubscribe(self, command: Command, args: Args) -> str:
        name = self._name(args)
        args.end()
        assert self.user is not None
        await self.blocking(self.server.subscriptions.unsubscribe, self.user, name)
        return "OK UNSUBSCRIBE completed"

    # -- LIST / LSUB -------------------------------------------------------------------------------------
    def _patterns(self, args: Args) -> tuple[str, str]:
        from mailserver.imap.names import decode_mutf7

        try:
            reference, pattern = decode_mutf7(args.astring("reference")), decode_mutf7(args.astring("pattern"))
        except InvalidName as exc:
            raise ParseError(str(exc)) from None
        args.end()
        return reference, pattern

    @staticmethod
    def _list_pattern(reference: str, pattern: str) -> ListPattern:
        try:
            return ListPattern(reference, pattern)
        except InvalidName as exc:
            raise ParseError(str(exc)) from None

    async def cmd_list(self, command: Command, args: Args) -> str:
        request = parse_list(args)
        if request.patterns == ("",):
            await self.send(b'* LIST (\\Noselect) "' + DELIMITER.encode() + b'" ""\r\n')
            return "OK LIST completed"
        assert self.user is not None
        user = self.user
        matchers = [self._list_pattern(request.reference, pattern) for pattern in request.patterns if pattern]
        wants_subscriptions = bool({"SUBSCRIBED"} & (request.select | request.returns))

        def listing() -> list[Entry]:
            # In a worker thread: a user with many mailboxes costs this session time, never the loop's.
            existing = [m.path.name for m in self.manager.list_mailboxes(user)]
            subscribed = self.server.subscriptions.subscriptions(user) if wants_subscriptions else []
            return list_entries(request, matchers, existing, subscribed)

        for entry in await self.blocking(listing):
            line = (b"* LIST (" + b" ".join(entry.attributes) + b') "' + DELIMITER.encode() + b'" '
                    + wire_name(entry.name))
            if entry.child_info_subscribed:
                line += b' ("CHILDINFO" ("SUBSCRIBED"))'
            await self.send(line + b"\r\n")
            if request.status_items and entry.exists:   # RFC 5819: right after the mailbox's LIST line
                try:
                    await self._send_status(entry.name, request.status_items)
                except MailboxNotFound:
                    pass   # deleted since it was listed: nothing to report
        return "OK LIST completed"

    async def cmd_lsub(self, command: Command, args: Args) -> str:
        reference, pattern = self._patterns(args)
        assert self.user is not None
        if not pattern:
            await self.send(b'* LSUB (\\Noselect) "' + DELIMITER.encode() + b'" ""\r\n')
            return "OK LSUB completed"
        user, matcher = self.user, self._list_pattern(reference, pattern)

        def listing() -> bytes:
            entries = lsub_entries(self.server.subscriptions.subscriptions(user), matcher)
            return b"".join(b"* LSUB (" + (b"\\Noselect" if noselect else b"") + b') "' + DELIMITER.encode() + b'" '
                            + wire_name(name) + b"\r\n" for name, noselect in entries)

        await self.send(await self.blocking(listing))
        return "OK LSUB completed"

    # -- STATUS / NAMESPACE ------------------------------------------------------------------------------
    async def cmd_status(self, command: Command, args: Args) -> str:
        name = self._name(args)
        items = parse_status_items(args.paren_list("status items"))
        args.end()
        await self._send_status(name, items)
        return "OK STATUS completed"

    async def _send_status(self, name: str, items: list[str] | tuple[str, ...]) -> None:
        path = self.path(name)

        def status() -> dict[str, int]:
            mailbox = self.manager.get_mailbox(path)
            state = self.manager.mailbox_state(path)
            values = {"MESSAGES": state.count, "UIDNEXT": state.uid_next, "UIDVALIDITY": mailbox.uid_validity,
                      "UNSEEN": state.unseen, "HIGHESTMODSEQ": max(1, state.highest_modseq)}
            if "RECENT" in items:
                values["RECENT"] = sum(1 for m in self.manager.get_messages(path) if m.flags.has(SystemFlag.RECENT))
            return values

        values = await self.blocking(status)
        body = b" ".join(item.encode() + b" " + number(values[item]) for item in items)
        await self.send(b"* STATUS " + wire_name(name) + b" (" + body + b")\r\n")

    async def cmd_namespace(self, command: Command, args: Args) -> str:
        args.end()
        await self.send(b'* NAMESPACE (("" "' + DELIMITER.encode() + b'")) NIL NIL\r\n')
        return "OK NAMESPACE completed"

    # -- APPEND ---------------------------------------------------------------------------------------
    async def cmd_append(self, command: Command, args: Args) -> str:
        name = self._name(args)
        flags = parse_flags(args.optional_list() or [])
        when = None
        if isinstance(args.peek(), str) and not isinstance(args.peek(), Atom):
            try:
                when = parse_date_time(args.astring("date-time"))
            except ValueError as exc:
                raise ParseError(str(exc)) from None
        message = args.next("message literal")
        if not isinstance(message, Literal):
            raise ParseError("APPEND needs the message as a literal")
        if args.more():
            raise ParseError("MULTIAPPEND is not supported: one message per APPEND")
        path = self.path(name)
        # As James: the message is \\Recent for the next session to select the mailbox, or, when this
        # session has it selected, for this session only.
        selected = self.selected if self.selected is not None and self.selected.path == path else None
        stored_flags = flags if selected is not None else Flags(flags.system | {SystemFlag.RECENT}, flags.user)

        def append() -> tuple[int, MessageMetadata, Any]:
            try:
                mailbox = self.manager.get_mailbox(path)
            except MailboxNotFound:
                raise No(f"mailbox {name} does not exist", "TRYCREATE") from None
            result = self.manager.append(mailbox, message.stream(), internal_date=when, flags=stored_flags)
            return mailbox.uid_validity, result.metadata, mailbox.id

        uid_validity, appended, mailbox_id = await self.blocking(append)
        uid = appended.uid
        if selected is not None and selected.mailbox.id == mailbox_id:
            selected.recent.add(uid)
            selected.note_added([appended])   # what its event would make the session read again
        self.server.watcher.changed(mailbox_id)
        return f"OK [APPENDUID {uid_validity} {uid}] APPEND completed"
