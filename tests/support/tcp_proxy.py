"""A TCP proxy a test closes and reopens: "service X is down" for one process under test only.

The shared backing services are used by other people at the same time and are never stopped; a
process under test is pointed at this proxy instead, and ``close()`` makes the service unreachable
for it alone: the listening socket goes (connections are refused) and every open connection is cut
(a keep-alive pool finds its sockets dead). ``open()`` listens again on the same port.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading

from tests.support.ports import unused_port

CHUNK = 65536


class TcpProxy:
    def __init__(self, upstream_host: str, upstream_port: int, port: int | None = None) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = port or unused_port()
        self._lock = threading.Lock()
        self._server: socket.socket | None = None
        self._connections: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def is_open(self) -> bool:
        return self._server is not None

    def open(self) -> TcpProxy:
        with self._lock:
            if self._server is not None:
                return self
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", self.port))
            server.listen(64)
            self._server = server
        thread = threading.Thread(target=self._accept, args=(server,), name=f"tcp-proxy-{self.port}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def close(self) -> None:
        """Refuse new connections and cut the open ones."""
        with self._lock:
            server, self._server = self._server, None
            connections, self._connections = self._connections, set()
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def __enter__(self) -> TcpProxy:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals
    def _accept(self, server: socket.socket) -> None:
        while True:
            try:
                client, _ = server.accept()
            except OSError:
                return   # closed
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._server is not server:   # closed meanwhile
                    client.close()
                    upstream.close()
                    return
                self._connections.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, client: socket.socket, upstream: socket.socket) -> None:
        peers = {client: upstream, upstream: client}
        with selectors.DefaultSelector() as selector:
            for sock in peers:
                selector.register(sock, selectors.EVENT_READ)
            try:
                while True:
                    for key, _ in selector.select(timeout=1.0):
                        data = key.fileobj.recv(CHUNK)  # type: ignore[union-attr]
                        if not data:
                            return
                        peers[key.fileobj].sendall(data)  # type: ignore[index]
                    if client.fileno() < 0 or upstream.fileno() < 0:
                        return
            except (OSError, ValueError):
                return
            finally:
                with self._lock:
                    self._connections.difference_update((client, upstream))
                for sock in peers:
                    sock.close()
