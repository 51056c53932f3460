"""Fixtures: a real WebAdmin per test, with ``webadmin_default`` pointing at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest

from mailserver.webadmin.context import WebAdminContext
from tests.support.ports import unused_port
from tests.unit.plugins.webadmin_server import CASSANDRA, OPENSEARCH, Server, Switchable, connection, serving
from tests.unit.webadmin.webadmin_support import FULL, make_context


@pytest.fixture
def serve(monkeypatch) -> Iterator[Callable[..., Server]]:
    """``serve(ctx=None, password=FULL, **extra)``: start a server and point webadmin_default at it.

    Without ``ctx``: password auth and two switchable checks, healthy at first.
    """
    with ExitStack() as servers:
        def start(ctx: WebAdminContext | None = None, password: str | None = FULL, **extra: str) -> Server:
            checks = {name: Switchable(name) for name in (CASSANDRA, OPENSEARCH)}
            ctx = ctx or make_context(health_checks=list(checks.values()))
            port = servers.enter_context(serving(ctx))
            monkeypatch.setenv("AIRFLOW_CONN_WEBADMIN_DEFAULT", connection(port, password, **extra))
            return Server(ctx, port, checks)

        yield start


@pytest.fixture
def webadmin(serve) -> Server:
    return serve()


@pytest.fixture
def closed_port() -> int:
    """A loopback port nobody listens on."""
    return unused_port()
