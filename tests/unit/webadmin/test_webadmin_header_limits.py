"""Request heads are bounded: too many header fields or too many bytes are refused (431 in James's error
body, or the HTTP parser's 400 for a head that never ends), and the server goes on answering."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from mailserver.webadmin.app import create_app
from mailserver.webadmin.auth import AuthConfig
from mailserver.webadmin.server import ServerConfig, uvicorn_config
from tests.support.ports import unused_port
from tests.support.uvicorn_thread import running
from tests.unit.webadmin.webadmin_support import FULL, error, make_context

SMALL_HEAD = 4096
FEW_HEADERS = 20


def head(path: str, headers: list[tuple[str, str]]) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def exchange(port: int, request: bytes) -> bytes:
    """Send ``request`` and read until the server closes the connection or has sent a whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass   # the server answered and closed while the rest was still being sent
        answer = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                return answer
            if not chunk:
                return answer
            answer += chunk


@pytest.fixture
def port() -> Iterator[int]:
    """The app served by uvicorn as ``mailserver serve`` builds it, with small head limits."""
    config = ServerConfig("127.0.0.1", unused_port(), AuthConfig.password([FULL]), max_header_bytes=SMALL_HEAD,
                          max_headers=FEW_HEADERS)
    app = create_app(make_context(max_header_bytes=config.max_header_bytes, max_headers=config.max_headers))
    server = uvicorn.Server(uvicorn_config(app, config, log_level="warning", lifespan="off"))
    with running(server):
        yield config.port


def still_answers(port: int) -> None:
    response = httpx.get(f"http://127.0.0.1:{port}/domains", headers={"Password": FULL}, timeout=10)
    assert response.status_code == 200 and response.json() == []


def test_a_2_mb_header_is_refused_and_the_server_still_answers(port):
    answer = exchange(port, head("/domains", [("Password", FULL), ("X-Big", "a" * 2 * 1024 * 1024)]))
    status = answer.split(b"\r\n", 1)[0]
    assert status in (b"HTTP/1.1 400 Bad Request", b"HTTP/1.1 431 Request Header Fields Too Large"), answer[:200]
    still_answers(port)


def test_20000_headers_are_refused_and_the_server_still_answers(port):
    answer = exchange(port, head("/domains", [("Password", FULL), *((f"X-{i}", "v") for i in range(20000))]))
    assert answer.split(b"\r\n", 1)[0] in (b"HTTP/1.1 400 Bad Request",
                                           b"HTTP/1.1 431 Request Header Fields Too Large"), answer[:200]
    still_answers(port)


def test_a_complete_head_over_the_limits_gets_431_in_james_shape(port):
    many = [("Password", FULL), *((f"X-{i}", "v") for i in range(FEW_HEADERS))]
    response = httpx.get(f"http://127.0.0.1:{port}/domains", headers=many, timeout=10)
    body = error(response)
    assert (response.status_code, body["type"]) == (431, "InvalidArgument")
    assert f"at most {FEW_HEADERS}" in body["details"]
    response = httpx.get(f"http://127.0.0.1:{port}/domains", headers={"Password": FULL, "X-Big": "a" * SMALL_HEAD},
                         timeout=10)
    body = error(response)
    assert response.status_code == 431 and f"at most {SMALL_HEAD}" in body["details"]
    still_answers(port)


def test_heads_within_the_limits_are_served(port):
    headers = {"Password": FULL, **{f"X-{i}": "v" for i in range(FEW_HEADERS - 8)}}   # httpx adds its own
    assert httpx.get(f"http://127.0.0.1:{port}/domains", headers=headers, timeout=10).status_code == 200


def test_the_limits_come_from_the_environment():
    env = {"MAILSERVER_WEBADMIN_PASSWORD": FULL}
    assert (ServerConfig.from_env(env).max_header_bytes, ServerConfig.from_env(env).max_headers) == (16384, 100)
    tuned = ServerConfig.from_env({**env, "MAILSERVER_WEBADMIN_MAX_HEADER_BYTES": "8192",
                                   "MAILSERVER_WEBADMIN_MAX_HEADERS": "50"})
    assert (tuned.max_header_bytes, tuned.max_headers) == (8192, 50)
    with pytest.raises(ValueError, match="MAILSERVER_WEBADMIN_MAX_HEADERS"):
        ServerConfig.from_env({**env, "MAILSERVER_WEBADMIN_MAX_HEADERS": "0"})
