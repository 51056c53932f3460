"""Read request bodies as JSON whatever the client said: James's WebAdmin ignores Content-Type.

Operators' scripts use ``curl -d '{"password": "..."}'``, which sends
``application/x-www-form-urlencoded``; FastAPI would refuse that body as not JSON. Only that
type and a missing one are rewritten: an explicit other type (say ``message/rfc822``) is kept.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

_REWRITTEN = {b"", b"application/x-www-form-urlencoded"}


class JsonBodyMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            current = next((v for k, v in scope["headers"] if k == b"content-type"), b"")
            if current.split(b";")[0].strip().lower() in _REWRITTEN:
                # In place: outer middlewares read what routing later records in this same scope.
                scope["headers"] = [*headers, (b"content-type", b"application/json")]
        await self.app(scope, receive, send)
