"""Plays an MPT script against a server over TCP, session by session, as James's ``ProtocolSession``
does: client lines are sent as they are (literals included, line by line), each server line is read
and matched, an element for every session (no ``SESSION:`` yet) applies to each in turn."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Mapping

from .differences import Differences
from .script import ALL_SESSIONS, Client, Continuation, Element, Reinit, Script, Server, Unordered, Wait

_LOGIN = re.compile(r"(?i)^(\S+ LOGIN )(\S+)( .*)$")


class MptFailure(AssertionError):
    pass


class _Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.address = (host, port)
        self.timeout = timeout
        self._sock = self._connect()
        self._buffer = b""

    def _connect(self) -> socket.socket:
        sock = socket.create_connection(self.address, timeout=self.timeout)
        # Scripts send a message line by line: without this, Nagle and delayed ACKs stall each line.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def restart(self) -> None:
        self.close()
        self._sock = self._connect()
        self._buffer = b""

    def write_line(self, line: str) -> None:
        try:
            self._sock.sendall(line.encode("utf-8") + b"\r\n")
        except OSError as exc:
            raise MptFailure(f"could not send {line!r}: {exc}") from None

    def read_line(self, where: str) -> str:
        while b"\r\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise MptFailure(f"{where}: no line from the server within {self.timeout}s") from None
            except OSError as exc:
                raise MptFailure(f"{where}: the connection broke ({exc})") from None
            if not chunk:
                raise MptFailure(f"{where}: the server closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\r\n", 1)
        return line.decode("utf-8", errors="replace")

    def unread(self, line: str) -> None:
        self._buffer = line.encode("utf-8") + b"\r\n" + self._buffer

    def close(self) -> None:
        self._sock.close()


class Player:
    def __init__(self, host: str, port: int, differences: Differences, users: Mapping[str, str],
                 timeout: float = 5.0) -> None:
        self.host, self.port = host, port
        self.differences = differences
        self.users = users          # the scripts' user names -> this server's
        self.timeout = timeout

    def play(self, script: Script) -> None:
        sessions = [_Connection(self.host, self.port, self.timeout) for _ in range(script.session_count)]
        try:
            for element in script.elements:
                targets = sessions if element.session == ALL_SESSIONS else [sessions[element.session]]
                for session in targets:
                    self._step(element, session)
        finally:
            for session in sessions:
                session.close()

    def _client_line(self, line: str) -> str:
        login = _LOGIN.match(line)
        if login and login[2] in self.users:
            return login[1] + self.users[login[2]] + login[3]
        return line

    def _read(self, session: _Connection, where: str) -> str:
        while True:
            line = session.read_line(where)
            if not self.differences.is_extra(line):
                return line

    def _step(self, element: Element, session: _Connection) -> None:
        where = element.location
        if isinstance(element, Client):
            session.write_line(self._client_line(element.line))
        elif isinstance(element, Server):
            self._expect(session, element.pattern, where)
        elif isinstance(element, Unordered):
            self._expect_unordered(session, element.patterns, where)
        elif isinstance(element, Continuation):
            line = self._read(session, where)
            if not line.startswith("+"):
                raise MptFailure(f"{where}: expected a continuation request, got {line!r}")
        elif isinstance(element, Reinit):
            session.restart()
        elif isinstance(element, Wait):
            time.sleep(element.millis / 1000)

    def _expect(self, session: _Connection, pattern: str, where: str) -> None:
        actual = self._read(session, where)
        if self.differences.matches(pattern, actual):
            return
        if self.differences.optional(pattern):
            session.unread(actual)   # a line James sends and we need not (declared): ours comes next
            return
        raise MptFailure(f"{where}\n  expected: {pattern}\n  actual:   {actual}")

    def _expect_unordered(self, session: _Connection, patterns: tuple[str, ...], where: str) -> None:
        required = [p for p in patterns if not self.differences.optional(p)]
        optional = [p for p in patterns if self.differences.optional(p)]
        while required:
            actual = self._read(session, where)
            found = next((p for p in required + optional if self.differences.matches(p, actual)), None)
            if found is None:
                raise MptFailure(f"{where}\n  expected one of: {required}\n  actual:   {actual}")
            (required if found in required else optional).remove(found)
        while optional:
            actual = self._read(session, where)
            found = next((p for p in optional if self.differences.matches(p, actual)), None)
            if found is None:
                session.unread(actual)
                return
            optional.remove(found)
