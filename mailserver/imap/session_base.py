"""The session as its command handlers see it: its states, the two outcomes a handler raises
(``No``, ``Bye``), and ``SessionBase``, what the handlers use of the session.

Why a module of its own: ``Session`` mixes the handlers in (``MailboxCommands``,
``MessageCommands``), so the handlers must not import the session; both import this instead.
"""

from __future__ import annotations

import asyncio
from enum import Enum
from typing import Any

from mailserver.imap.mailbox_feed import MailboxFeed
from mailserver.imap.parser import Args
from mailserver.imap.selected import SelectedMailbox
from mailserver.mailbox.manager import MailboxManager
from mailserver.model.address import Username
from mailserver.model.ids import MailboxId
from mailserver.model.mailbox import MailboxPath


class State(Enum):
    NOT_AUTHENTICATED = "not authenticated"
    AUTHENTICATED = "authenticated"
    SELECTED = "selected"
    LOGOUT = "logout"


class No(Exception):
    """A tagged NO with an optional response code."""

    def __init__(self, text: str, code: str | None = None) -> None:
        super().__init__(text)
        self.code = code


class Bye(Exception):
    """Send ``* BYE text`` and close the connection."""


class SessionBase:
    """What the command mixins use of ``Session``: declared here, provided by ``Session``.

    ``Session`` comes first in its own MRO, so its methods replace these stubs; a stub that runs
    means a mixin uses something the session does not provide.
    """

    # The ImapServer: typed loosely, because naming it here would tie this module to the server,
    # which imports the session.
    server: Any
    manager: MailboxManager
    state: State
    user: Username | None
    selected: SelectedMailbox | None
    feed: MailboxFeed | None   # the selected mailbox's events, while the bus brings them
    # The mailbox a failed SELECT left: its \\Recent messages stay this session's if it is selected
    # again (James keeps it selected then, RFC 3501 6.3.1 wants none selected).
    left_by_failed_select: SelectedMailbox | None
    condstore: bool
    qresync: bool   # ENABLE QRESYNC was issued (RFC 7162 3.2.3)
    writer: asyncio.StreamWriter

    async def send(self, data: bytes) -> None:
        raise NotImplementedError

    def write(self, data: bytes) -> None:
        """Queue octets for the client; ``drain`` sends them."""
        raise NotImplementedError

    async def queue(self, data: bytes) -> None:
        """Queue untagged data to go out with the tagged response (sent sooner when much is queued)."""
        raise NotImplementedError

    async def drain(self) -> None:
        raise NotImplementedError

    async def blocking(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a blocking call in the server's pool."""
        raise NotImplementedError

    async def _refresh(self, *, expunges: bool) -> None:
        """Send the untagged updates of the selected mailbox."""
        raise NotImplementedError

    def _listen(self, mailbox_id: MailboxId) -> MailboxFeed | None:
        """Blocking: a feed registered on the mailbox's events (None without an event bus)."""
        raise NotImplementedError

    def _drop_feed(self) -> None:
        """Stop listening to the selected mailbox's events."""
        raise NotImplementedError

    def path(self, name: str) -> MailboxPath:
        """The user's mailbox of that name (``No`` when the name is invalid)."""
        raise NotImplementedError

    def _name(self, args: Args, what: str = "mailbox name") -> str:
        """A mailbox name argument, decoded (``MailboxCommands``; the message commands use it too)."""
        raise NotImplementedError
