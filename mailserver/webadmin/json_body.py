"""Request bodies: read as JSON whatever the client said (as James), and never larger than 1 MiB.

Operators' scripts use ``curl -d '{"password": "..."}'``, which sends
``application/x-www-form-urlencoded``; FastAPI would refuse that body as not JSON. Only that
type and a missing one are rewritten: an explicit other type (say ``message/rfc822``) is kept.

Every WebAdmin body is a small JSON document or a line of text, so a body over ``max_body``
bytes is refused with ``413`` in James's error shape before it is held in memory: at once when
``Content-Length`` announces it, else as soon as the chunks received pass the limit (whatever
the route was doing with the partial body, the client gets the 413).
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mailserver.webadmin.errors import INVALID_ARGUMENT, error_response

MAX_BODY_BYTES = 1024 * 1024
_REWRITTEN = {b"", b"application/x-www-form-urlencoded"}


class BodyTooLarge(HTTPException):
    """Raised from ``receive``; an HTTPException so FastAPI's body parsing lets it through (not a 400)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"The request body exceeds {limit} bytes")


class JsonBodyMiddleware:
    def __init__(self, app: ASGIApp, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            current = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
            if current.split(b";")[0].strip().lower() in _REWRITTEN:
                # In place: outer middlewares read what routing later records in this same scope.
                scope["headers"] = [*headers, (b"content-type", b"application/json")]
        declared = next((v for k, v in scope["headers"] if k == b"content-length"), b"")
        if declared.isdigit() and int(declared) > self.max_body:
            await self._too_large(scope, receive, send)   # the body is never read
            return
        await self._limited(scope, receive, send)

    async def _limited(self, scope: Scope, receive: Receive, send: Send) -> None:
        received = 0
        over = False
        started = False

        async def limited_receive() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    over = True
                    raise BodyTooLarge(self.max_body)
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if over and not started:
                return   # the route's answer to a truncated body is replaced by the 413 below
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        except BodyTooLarge:
            pass
        if over and not started:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(413, INVALID_ARGUMENT, "The request body is too large",
                                  f"WebAdmin accepts request bodies of at most {self.max_body} bytes")
        await response(scope, receive, send)
