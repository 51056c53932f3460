"""Read one IMAP command off the stream: its lines and literals, within the configured limits.

Limits are enforced before data is kept, so an oversized command costs no memory:

* a line longer than ``max_line_length`` is skipped up to its end (``LineTooLong``), except in a
  compressed stream (COMPRESS), where skipping would inflate as much as the client likes, a thousand
  octets for each it sends: there it is not read further and the session ends (``OverlongLineUnskipped``);
* a synchronizing literal ``{n}`` over the limit is refused *before* the ``+`` continuation,
  so the client never sends it (``LiteralTooLarge``);
* a non-synchronizing literal ``{n+}`` (LITERAL+, RFC 7888) is held to the same limits; one
  over them is refused too (``NonSyncLiteralRefused``), unread: its octets are already on
  their way and cannot be told from commands, so the session ends the connection (RFC 7888
  section 4);
* before login every literal, and the whole command's, is bounded by
  ``max_literal_size_before_login`` (a few KiB: a password), so an unauthenticated client costs
  neither memory nor disk;
* after login APPEND may carry one message-sized literal (``max_append_size``), spooled to a
  temporary file past 1 MiB; every other literal is bounded by ``max_literal_size``, and the
  whole command by a few of them.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Awaitable, Callable
from typing import Protocol

from mailserver.imap.parser import Literal

CHUNK = 64 * 1024
SPOOL_IN_MEMORY = 1024 * 1024
CONTINUE = b"+ Ready for literal data\r\n"
_LITERAL = re.compile(rb"\{(\d{1,12})(\+?)\}$")
_HEAD = re.compile(rb"^(\S+) +(?:(UID) +)?([A-Za-z]+)")
MAX_LITERALS_PER_COMMAND = 32


class CommandTooLarge(Exception):
    """Refused for its size; ``tag`` is the command's tag when it was read."""

    def __init__(self, message: str, tag: str | None, command: str | None = None) -> None:
        super().__init__(message)
        self.tag = tag
        self.command = command


class LineTooLong(CommandTooLarge):
    pass


class OverlongLineUnskipped(LineTooLong):
    """An overlong line left unread: the stream is out of step with the commands, the session must end."""


class LiteralTooLarge(CommandTooLarge):
    pass


class NonSyncLiteralRefused(LiteralTooLarge):
    """A refused non-synchronizing literal: the connection cannot go on (its octets follow unasked)."""


class ConnectionClosed(Exception):
    pass


class OctetSource(Protocol):
    """What is read of the connection: an ``asyncio.StreamReader``, or the inflating one of COMPRESS."""

    async def readuntil(self, separator: bytes = ...) -> bytes: ...

    async def readexactly(self, n: int) -> bytes: ...


class CommandReader:
    def __init__(self, reader: OctetSource, send: Callable[[bytes], Awaitable[None]], *,
                 max_line_length: int, max_literal_size: int, max_append_size: int,
                 max_literal_size_before_login: int, authenticated: Callable[[], bool]) -> None:
        self.reader = reader
        self.send = send
        self.max_line_length = max_line_length
        self.max_literal_size = max_literal_size
        self.max_append_size = max_append_size
        self.max_literal_size_before_login = max_literal_size_before_login
        self.authenticated = authenticated
        self.skips_overlong_lines = True   # False once the stream is compressed (see the module's docstring)

    async def read_line(self) -> bytes:
        """One line without its CRLF (a bare LF is accepted); LineTooLong after skipping it."""
        try:
            line = await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            raise ConnectionClosed() from exc
        except asyncio.LimitOverrunError as exc:
            head = await self.reader.readexactly(min(exc.consumed, 64)) if exc.consumed else b""
            match = _HEAD.match(head)
            tag = match.group(1).decode("ascii", "replace") if match else None
            message = f"command line longer than {self.max_line_length} octets"
            if not self.skips_overlong_lines:
                raise OverlongLineUnskipped(message, tag) from None
            await self._skip_line(exc.consumed - len(head))
            raise LineTooLong(message, tag) from None
        if len(line) > self.max_line_length + 2:
            raise LineTooLong(f"command line longer than {self.max_line_length} octets", None)
        return line[:-2] if line.endswith(b"\r\n") else line[:-1]

    async def _skip_line(self, consumed: int) -> None:
        while True:
            if consumed:
                await self.reader.readexactly(consumed)
            try:
                await self.reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as exc:
                consumed = exc.consumed
            except asyncio.IncompleteReadError as exc:
                raise ConnectionClosed() from exc

    async def read_command(self) -> list[bytes | Literal]:
        """The segments of one command (see ``parser.parse_command``)."""
        segments: list[bytes | Literal] = []
        line = await self.read_line()
        head = _HEAD.match(line)
        tag = head.group(1).decode("ascii", "replace") if head else None
        command = head.group(3).decode("ascii").upper() if head else None
        authenticated = self.authenticated()
        big_allowed = command == "APPEND" and authenticated
        if authenticated:
            limit = self.max_append_size if big_allowed else self.max_literal_size
            total_limit, when = limit + self.max_literal_size, ""
        else:
            limit = total_limit = self.max_literal_size_before_login
            when = " before login"
        total = 0
        try:
            while True:
                segments.append(line)
                match = _LITERAL.search(line)
                if match is None:
                    return segments
                if len(segments) // 2 >= MAX_LITERALS_PER_COMMAND:
                    raise LiteralTooLarge(f"more than {MAX_LITERALS_PER_COMMAND} literals in one command", tag,
                                          command)
                size, non_sync = int(match.group(1)), bool(match.group(2))
                total += size
                if size > limit or total > total_limit:
                    refused = NonSyncLiteralRefused if non_sync else LiteralTooLarge
                    raise refused(f"literal of {size} octets exceeds the limit of {limit}{when}", tag, command)
                if not non_sync:
                    await self.send(CONTINUE)
                segments.append(await self._read_literal(size, spool=big_allowed and size > SPOOL_IN_MEMORY))
                line = await self.read_line()
        except BaseException:
            for segment in segments:
                if isinstance(segment, Literal):
                    segment.close()
            raise

    async def _read_literal(self, size: int, *, spool: bool) -> Literal:
        try:
            if not spool:
                return Literal(data=await self.reader.readexactly(size), size=size)
            file = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
            try:
                remaining = size
                while remaining:
                    chunk = await self.reader.readexactly(min(CHUNK, remaining))
                    file.write(chunk)
                    remaining -= len(chunk)
            except BaseException:
                file.close()
                raise
            return Literal(file=file, size=size)
        except asyncio.IncompleteReadError as exc:
            raise ConnectionClosed() from exc
