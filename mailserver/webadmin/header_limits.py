"""Request heads of bounded size and header count: ``431`` in James's error shape past either limit.

uvicorn's h11 parser gives up on a request head that is still incomplete past
``h11_max_incomplete_event_size`` bytes (``400 Invalid HTTP request received.``, connection
closed), which bounds the memory a client can make the server buffer; the same byte limit is
given to it (``server.uvicorn_config``). A complete head that arrived in one read can still be
larger, and h11 counts no headers: this middleware checks both exactly, before any route or
authentication runs. The size counted is the request line (method, target, version) and every
header field as sent (``name: value`` and its line end).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from mailserver.webadmin.errors import INVALID_ARGUMENT, error_response

DEFAULT_MAX_HEADER_BYTES = 16 * 1024   # h11's own default; nginx's large_client_header_buffers hold 4 x 8 KiB
DEFAULT_MAX_HEADERS = 100              # Apache httpd's LimitRequestFields
TOO_LARGE = 431


def head_size(scope: Scope) -> int:
    target = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string") or b"")
    request_line = len(scope["method"]) + 1 + target + 1 + len("HTTP/1.1") + 2
    return request_line + sum(len(name) + len(value) + 4 for name, value in scope["headers"])


class HeaderLimitsMiddleware:
    def __init__(self, app: ASGIApp, max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES,
                 max_headers: int = DEFAULT_MAX_HEADERS) -> None:
        self.app = app
        self.max_header_bytes = max_header_bytes
        self.max_headers = max_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            count, size = len(scope["headers"]), head_size(scope)
            if count > self.max_headers:
                await self._refuse(scope, receive, send, f"The request has {count} header fields; WebAdmin accepts "
                                                         f"at most {self.max_headers}")
                return
            if size > self.max_header_bytes:
                await self._refuse(scope, receive, send, f"The request line and header fields take {size} bytes; "
                                                         f"WebAdmin accepts at most {self.max_header_bytes}")
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, details: str) -> None:
        response = error_response(TOO_LARGE, INVALID_ARGUMENT, "Request header fields too large", details)
        response.headers["connection"] = "close"
        await response(scope, receive, send)
