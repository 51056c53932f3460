"""Read one IMAP command off the stream: its lines and literals, within the configured limits.

Limits are enforced before data is kept, so an oversized command costs no memory:

* a line longer than ``max_line_length`` is skipped up to its end (``LineTooLong``);
* a synchronizing literal ``{n}`` over the limit is refused *before* the ``+`` continuation,
  so the client never sends it (``LiteralTooLarge``); a non-synchronizing one ``{n+}`` (RFC
  7888) is read and thrown away in chunks;
* APPEND may carry one message-sized literal (``max_append_size``), spooled to a temporary
  file past 1 MiB; every other literal is bounded by ``max_literal_size``, and the whole
  command by a few of them.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from collections.abc import Awaitable, Callable

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


class LiteralTooLarge(CommandTooLarge):
    pass


class ConnectionClosed(Exception):
    pass


class CommandReader:
    def __init__(self, reader: asyncio.StreamReader, send: Callable[[bytes], Awaitable[None]], *,
                 max_line_length: int, max_literal_size: int, max_append_size: int) -> None:
        self.reader = reader
        self.send = send
        self.max_line_length = max_line_length
        self.max_literal_size = max_literal_size
        self.max_append_size = max_append_size

    async def read_line(self) -> bytes:
        """One line without its CRLF (a bare LF is accepted); LineTooLong after skipping it."""
        try:
            line = await self.reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            raise ConnectionClosed() from exc
        except asyncio.LimitOverrunError as exc:
            head = await self.reader.readexactly(min(exc.consumed, 64)) if exc.consumed else b""
            await self._skip_line(exc.consumed - len(head))
            match = _HEAD.match(head)
            raise LineTooLong(f"command line longer than {self.max_line_length} octets",
                              match.group(1).decode("ascii", "replace") if match else None) from None
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
        big_allowed = command == "APPEND"
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
                limit = self.max_append_size if big_allowed else self.max_literal_size
                total += size
                if size > limit or total > limit + self.max_literal_size:
                    if non_sync:  # the client sends it anyway: read it into the void
                        await self._discard(size)
                        await self._skip_rest_of_command()
                    raise LiteralTooLarge(f"literal of {size} octets exceeds the limit of {limit}", tag, command)
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
            return Literal(file=file, size=size)  # type: ignore[arg-type]
        except asyncio.IncompleteReadError as exc:
            raise ConnectionClosed() from exc

    async def _discard(self, size: int) -> None:
        remaining = size
        try:
            while remaining:
                remaining -= len(await self.reader.readexactly(min(CHUNK, remaining)))
        except asyncio.IncompleteReadError as exc:
            raise ConnectionClosed() from exc

    async def _skip_rest_of_command(self) -> None:
        """After a discarded non-synchronizing literal: the rest of the command, with its own literals."""
        while True:
            try:
                line = await self.read_line()
            except LineTooLong:
                return
            match = _LITERAL.search(line)
            if match is None:
                return
            if not match.group(2):  # synchronizing: the client waits for a + we never send
                return
            await self._discard(int(match.group(1)))
