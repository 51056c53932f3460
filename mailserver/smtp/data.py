"""The content of DATA, read line by line into a spool: memory per session stays small.

aiosmtpd (1.4.6) collects the content of DATA in memory (a list of line buffers, up to
``data_size_limit``) and documents no hook to stream it: ``handle_DATA`` is called once the
whole content sits in ``envelope.original_content``. A client holding DATA open thus pins up
to the size limit (plus per-line overhead) per session. The documented extension point that
remains is overriding the ``smtp_DATA`` command method in an ``SMTP`` subclass ("Subclasses can
override these", aiosmtpd's ``smtp.rst``); ``IntakeSMTP.smtp_DATA`` does so and reads the
content here instead:

* each line is written, dot-unstuffed (RFC 5321 4.5.2), to a ``SpooledTemporaryFile`` that
  keeps at most ``memory`` bytes in memory and spills the rest to a temporary file;
* the refusals aiosmtpd would give, plus the strict line endings of the intake, are decided
  while reading, and the spool is dropped at once: the rest of the content is read (so the
  session stays in step) but not kept;
* the caller owns the returned ``ReceivedData`` and closes it on every path (reply, abort,
  disconnect): a closed spool returns its memory, or deletes its file, at once.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass
from typing import IO

BAD_LINE_ENDING = "500 5.0.0 line delimiter must be CRLF"
TOO_MUCH_DATA = "552 5.3.4 Message size exceeds fixed maximum message size"
BARE_CR_OR_LF = re.compile(rb"[\r\n]")
END_OF_DATA = b".\r\n"
DEFAULT_MEMORY = 256 * 1024


def line_too_long(limit: int) -> str:
    """The refusal of a content with a line over ``limit`` octets (not counting its CRLF), James's 500."""
    return f"500 5.5.2 Line too long: at most {limit} octets a line, CRLF not counted"


@dataclass
class ReceivedData:
    """What DATA carried: the content (dot-unstuffed) or the reply refusing it."""

    spool: IO[bytes] | None
    size: int
    refusal: str | None = None

    @classmethod
    def spooled(cls, memory: int = DEFAULT_MEMORY) -> ReceivedData:
        """An empty content keeping at most ``memory`` bytes in memory; the owner closes it."""
        return cls(tempfile.SpooledTemporaryFile(max_size=memory), 0)

    def close(self) -> None:
        spool, self.spool = self.spool, None
        if spool is not None:
            spool.close()


async def receive(reader: asyncio.StreamReader, received: ReceivedData, *, size_limit: int | None,
                  line_limit: int, strict_crlf: bool) -> None:
    """Read up to the ``.`` line into ``received``; its spool is rewound when the content is accepted.

    ``line_limit`` is the longest line accepted, in octets as sent (a leading transparency dot
    included) without the CRLF; the reader's own limit must be the same, so that a longer line
    surfaces as ``LimitOverrunError`` and is read in pieces. ``received.size`` grows as lines
    arrive. Raises (``CancelledError`` on disconnect) with the spool closed.
    """
    try:
        await _read(reader, received, size_limit, line_limit, strict_crlf)
    except BaseException:
        received.close()
        raise
    if received.spool is not None:
        received.spool.seek(0)


async def _read(reader: asyncio.StreamReader, received: ReceivedData, size_limit: int | None, line_limit: int,
                strict_crlf: bool) -> None:
    counted = 0         # octets as sent (dot-stuffed), what SIZE and the limit are about
    line_length = 0     # of the line being read, when it comes in pieces
    at_line_start = True
    while True:
        try:
            piece = await reader.readuntil(b"\r\n")
        except asyncio.LimitOverrunError as exc:   # no CRLF within the reader's limit: a piece of a long line
            piece = await reader.read(exc.consumed)
            _refuse(received, line_too_long(line_limit))
        except asyncio.IncompleteReadError as exc:
            raise ConnectionResetError("connection closed during DATA") from exc
        if at_line_start and piece == END_OF_DATA:
            return
        counted += len(piece)
        line_length += len(piece)
        complete = piece.endswith(b"\r\n")
        if size_limit and counted > size_limit:
            _refuse(received, TOO_MUCH_DATA)
        elif line_length - (2 if complete else 0) > line_limit:
            _refuse(received, line_too_long(line_limit))
        elif strict_crlf and BARE_CR_OR_LF.search(piece, 0, len(piece) - 2 if complete else len(piece)):
            _refuse(received, BAD_LINE_ENDING)   # a bare CR or LF: possible SMTP smuggling
        if received.spool is not None:
            data = piece[1:] if at_line_start and piece.startswith(b".") else piece
            received.spool.write(data)
            received.size += len(data)
        at_line_start = complete
        if complete:
            line_length = 0


def _refuse(received: ReceivedData, reply: str) -> None:
    if received.refusal is None:
        received.refusal = reply
    received.close()   # nothing more is kept; what was kept is given back now
