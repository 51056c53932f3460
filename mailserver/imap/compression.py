"""COMPRESS=DEFLATE (RFC 4978): raw DEFLATE (RFC 1951, no zlib header) both ways once a session asks.

``InflatingReader`` reads the client's compressed octets as ``asyncio.StreamReader`` reads plain ones
(``readuntil``, ``readexactly``, with its ``limit``), so ``CommandReader`` enforces the same line and
literal limits on the inflated commands. Inflating is bounded: each step inflates at most ``STEP``
octets (``decompressobj().decompress(data, max_length)``, the rest of the input waiting in its
``unconsumed_tail``), and a step happens only while the caller still needs octets, so a
decompression bomb costs no more memory than the plain command it inflates to; every step yields
to the event loop, so a bomb inflating without network reads does not hold it.

``Deflater`` compresses the responses; ``flush`` ends each response with a sync flush
(``Z_SYNC_FLUSH``) so the client can inflate it at once.
"""

from __future__ import annotations

import asyncio
import zlib

STEP = 64 * 1024
RAW_DEFLATE = -zlib.MAX_WBITS   # negative window bits: no zlib header nor checksum (RFC 4978 section 3)


class CorruptStream(ConnectionError):
    """The client's octets are not a DEFLATE stream: nothing more can be read from the connection."""


class InflatingReader:
    def __init__(self, raw: asyncio.StreamReader, limit: int) -> None:
        self._raw = raw
        self._limit = limit
        self._inflate = zlib.decompressobj(RAW_DEFLATE)
        self._buffer = bytearray()
        self._output_was_full = False   # zlib may hold inflated octets back although its input is used up

    async def _fill(self) -> None:
        """Add up to ``STEP`` inflated octets to the buffer; IncompleteReadError at the end of the stream."""
        while True:
            tail = self._inflate.unconsumed_tail
            if tail or self._output_was_full:
                data = tail
            elif self._inflate.eof:   # the client ended its DEFLATE stream: nothing can follow
                raise asyncio.IncompleteReadError(bytes(self._buffer), None)
            else:
                data = await self._raw.read(STEP)
                if not data:
                    raise asyncio.IncompleteReadError(bytes(self._buffer), None)
            try:
                out = self._inflate.decompress(data, STEP)
            except zlib.error as exc:
                raise CorruptStream(f"invalid DEFLATE data from the client: {exc}") from None
            self._output_was_full = len(out) == STEP
            self._buffer += out   # before yielding: a cancelled read must not lose inflated octets
            await asyncio.sleep(0)   # inflating without reading the network must not hold the loop
            if out:
                return

    async def _fill_or_end(self, expected: int | None) -> None:
        """``_fill``; at the end of the stream, IncompleteReadError with what was buffered, as
        ``StreamReader`` gives it (``expected``: the octets asked for, None for a separator)."""
        try:
            await self._fill()
        except asyncio.IncompleteReadError:
            partial = bytes(self._buffer)
            self._buffer.clear()
            raise asyncio.IncompleteReadError(partial, expected) from None

    async def readuntil(self, separator: bytes = b"\n") -> bytes:
        """As ``StreamReader.readuntil``: LimitOverrunError past ``limit``, the data left buffered."""
        offset = 0
        while True:
            found = self._buffer.find(separator, offset)
            if found >= 0:
                if found > self._limit:
                    raise asyncio.LimitOverrunError("Separator is found, but chunk is longer than limit", found)
                end = found + len(separator)
                chunk = bytes(self._buffer[:end])
                del self._buffer[:end]
                return chunk
            offset = max(0, len(self._buffer) + 1 - len(separator))
            if offset > self._limit:
                raise asyncio.LimitOverrunError("Separator is not found, and chunk exceed the limit", offset)
            await self._fill_or_end(None)

    async def readexactly(self, n: int) -> bytes:
        while len(self._buffer) < n:
            await self._fill_or_end(n)
        chunk = bytes(self._buffer[:n])
        del self._buffer[:n]
        return chunk


class Deflater:
    def __init__(self) -> None:
        self._deflate = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, RAW_DEFLATE)

    def compress(self, data: bytes) -> bytes:
        return self._deflate.compress(data)

    def flush(self) -> bytes:
        """What the compressor holds, up to a byte boundary the client can inflate at once."""
        return self._deflate.flush(zlib.Z_SYNC_FLUSH)
