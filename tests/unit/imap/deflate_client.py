"""Clients of COMPRESS=DEFLATE (RFC 4978), which neither imaplib nor imapclient speak: an imaplib.IMAP4
that compresses after ``compress()``, and a raw one sending exact (compressed) octets."""

from __future__ import annotations

import imaplib
import io
import socket
import zlib

from tests.unit.imap.raw_client import RawImap

RAW_DEFLATE = -zlib.MAX_WBITS


class InflatingSocket(io.RawIOBase):
    """The server's octets of a socket, inflated (wrap it in ``io.BufferedReader`` for ``readline``)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inflate = zlib.decompressobj(RAW_DEFLATE)
        self.pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:   # type: ignore[no-untyped-def, override]
        while not self.pending:
            data = self.sock.recv(65536)
            if not data:
                return 0
            self.pending = self.inflate.decompress(data)
        n = min(len(buffer), len(self.pending))
        buffer[:n] = self.pending[:n]
        self.pending = self.pending[n:]
        return n


def deflater():
    return zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, RAW_DEFLATE)


def deflate(compressor, data: bytes) -> bytes:
    return compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)


class DeflateIMAP4(imaplib.IMAP4):
    def compress(self) -> tuple:
        """COMPRESS DEFLATE, then both ways compressed (the server sends nothing unasked after its OK)."""
        response = self.xatom("COMPRESS", "DEFLATE")
        if response[0] == "OK":
            self._deflater = deflater()
            self.file = io.BufferedReader(InflatingSocket(self.sock))
        return response

    def send(self, data: bytes) -> None:
        deflater_ = getattr(self, "_deflater", None)
        self.sock.sendall(deflate(deflater_, data) if deflater_ is not None else data)


class DeflateRaw(RawImap):
    """``RawImap`` whose ``compress(tag)`` switches the connection to raw DEFLATE both ways."""

    def compress(self, tag: bytes = b"z") -> bytes:
        answer = self.command(tag, b"COMPRESS DEFLATE")[-1]
        if answer.startswith(tag + b" OK"):
            self.deflater = deflater()
            self.file = io.BufferedReader(InflatingSocket(self.sock))
        return answer

    def send(self, data: bytes) -> None:
        compressor = getattr(self, "deflater", None)
        self.sock.sendall(deflate(compressor, data) if compressor is not None else data)

    def send_compressed(self, octets: bytes) -> None:
        """Octets already compressed by the caller (a bomb, garbage): sent as they are."""
        self.sock.sendall(octets)
