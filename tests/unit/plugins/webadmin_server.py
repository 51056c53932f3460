"""The real WebAdmin app (memory adapters) served by uvicorn on a free loopback port.

Plugins talk HTTP, so they are tested against the real routes, auth and error bodies rather than
mocks; ``webadmin_default`` points at the server through ``AIRFLOW_CONN_WEBADMIN_DEFAULT``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn

from mailserver.observability.health import HealthCheck, Result, Status
from mailserver.webadmin.app import create_app
from mailserver.webadmin.context import WebAdminContext
from tests.support.uvicorn_thread import running
from tests.unit.webadmin.webadmin_support import FULL

CASSANDRA, OPENSEARCH = "Cassandra backend", "OpenSearch Backend"


class Switchable(HealthCheck):
    """A health check whose answer the test sets: the seam to make /healthcheck fail."""

    def __init__(self, name: str) -> None:
        self.name, self.status, self.cause = name, Status.HEALTHY, None

    def set(self, status: Status, cause: str | None = None) -> None:
        self.status, self.cause = status, cause

    def check(self) -> Result:
        return Result(self.name, self.status, self.cause)


@dataclass
class Server:
    ctx: WebAdminContext
    port: int
    checks: dict[str, Switchable]


def connection(port: int, password: str | None = FULL, **extra: str) -> str:
    """``AIRFLOW_CONN_*`` JSON of a WebAdmin on the loopback (as include/connections.py builds it)."""
    conn: dict[str, object] = {"conn_type": "http", "host": "127.0.0.1", "port": port, "schema": "http"}
    if password is not None:
        conn["password"] = password
    if extra:
        conn["extra"] = extra
    return json.dumps(conn)


@contextmanager
def serving(ctx: WebAdminContext) -> Iterator[int]:
    """Serve ``create_app(ctx)`` in a thread; yields the port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))   # bound before uvicorn starts: no race for the port
    server = uvicorn.Server(uvicorn.Config(create_app(ctx), log_level="warning", lifespan="off"))
    try:
        with running(server, sockets=[sock]):
            yield sock.getsockname()[1]
    finally:
        sock.close()
