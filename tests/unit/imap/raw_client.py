"""A raw IMAP client over a socket: send exact bytes, read exact responses."""

from __future__ import annotations

import socket
import ssl


class RawImap:
    def __init__(self, port: int, timeout: float = 10.0, source: str | None = None) -> None:
        """``source``: the client address (any 127.x.y.z on Linux), to be another client for the server."""
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                             source_address=(source, 0) if source else None)
        self.file = self.sock.makefile("rb")
        self.greeting = self.line()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def line(self) -> bytes:
        line = self.file.readline()
        if not line:
            raise ConnectionError("closed by the server")
        return line

    def until_tagged(self, tag: bytes) -> list[bytes]:
        """Lines up to and including the tagged response of ``tag`` (literals are read as lines)."""
        lines = []
        while True:
            line = self.line()
            lines.append(line)
            if line.startswith(tag + b" "):
                return lines

    def command(self, tag: bytes, text: bytes) -> list[bytes]:
        self.send(tag + b" " + text + b"\r\n")
        return self.until_tagged(tag)

    def starttls(self, context: ssl.SSLContext) -> None:
        self.file.close()
        self.sock = context.wrap_socket(self.sock, server_hostname="localhost")
        self.file = self.sock.makefile("rb")

    def closed(self) -> bool:
        try:
            return self.file.readline() == b""
        except (ConnectionError, OSError):
            return True

    def close(self) -> None:
        try:
            self.file.close()
            self.sock.close()
        except OSError:
            pass
