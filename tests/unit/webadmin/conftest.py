"""WebAdmin on memory adapters: a context, an app and clients."""

from __future__ import annotations

import warnings

import pytest

with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # starlette's httpx deprecation notice
    from fastapi.testclient import TestClient

from mailserver.webadmin.app import create_app
from tests.unit.webadmin.webadmin_support import FULL, make_context


@pytest.fixture
def ctx():
    return make_context()


@pytest.fixture
def app(ctx):
    return create_app(ctx)


@pytest.fixture
def client(app) -> TestClient:
    """A full-access admin."""
    return TestClient(app, headers={"Password": FULL}, raise_server_exceptions=False)


@pytest.fixture
def anonymous(app) -> TestClient:
    return TestClient(app, raise_server_exceptions=False)
