"""``create_app``: the JMAP HTTP application (FastAPI, as WebAdmin).

Every route but the autodiscovery redirect (``/.well-known/jmap`` to the session, RFC 8620 2.2,
public as in James) needs an authenticated user: without one the answer is 401 before anything
else is read. ``GET /jmap/session`` is the session resource; ``POST /jmap`` the API, whose request is
refused whole (an RFC 7807 problem) when a core limit or the request's shape says so, before any
method runs; ``/upload`` and ``/download`` are ``blob_routes``. With a push hub, ``/eventSource``
and the WebSocket ``/jmap/ws`` push the user's state changes (``push``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from fastapi import FastAPI, Request, Response, WebSocket
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from mailserver.jmap.account import CallContext, MailServices
from mailserver.jmap.authentication import Authenticator
from mailserver.jmap.blob_routes import add_blob_routes, problem
from mailserver.jmap.capabilities import KNOWN, CoreLimits
from mailserver.jmap.concurrency import ConcurrentRequests, TooManyRequests
from mailserver.jmap.engine import Engine
from mailserver.jmap.errors import RequestError, limit_exceeded
from mailserver.jmap.methods.registry import METHODS
from mailserver.jmap.push.event_source import add_event_source_route
from mailserver.jmap.push.hub import PushHub
from mailserver.jmap.push.websocket import WEBSOCKET_PATH, add_websocket_route
from mailserver.jmap.request import parse_request
from mailserver.jmap.session_resource import session
from mailserver.model.address import Username
from mailserver.security.auth_throttle import AuthThrottle

PROTOCOL = "JMAP"
SESSION = "/jmap/session"
WELL_KNOWN = "/.well-known/jmap"


@dataclass(frozen=True)
class JmapContext:
    authenticator: Authenticator
    services: MailServices
    limits: CoreLimits = field(default_factory=CoreLimits)
    base_url: str | None = None   # None: the URL the request came to
    # Authentication failures, counted with IMAP's, SMTP's and WebAdmin's (docs/security.md).
    throttle: AuthThrottle = field(default_factory=AuthThrottle.off)
    push: PushHub | None = None   # None: no EventSource nor WebSocket


def create_app(ctx: JmapContext) -> FastAPI:
    app = FastAPI(title="mailserver JMAP", docs_url=None, redoc_url=None, openapi_url=None)
    engine = Engine(METHODS)
    concurrent = ConcurrentRequests(ctx.limits.max_concurrent_requests)

    def base_url(request: HTTPConnection) -> str:
        return (ctx.base_url or str(request.base_url)).rstrip("/")

    def session_of(request: HTTPConnection, user: Username) -> dict[str, object]:
        url = base_url(request)
        websocket = None
        if ctx.push is not None:
            websocket = ("wss://" if url.startswith("https://") else "ws://") + url.split("://", 1)[-1] + WEBSOCKET_PATH
        return session(user, ctx.limits, url, submission=ctx.services.submission is not None,
                       vacation_response=ctx.services.vacations is not None, websocket_url=websocket)

    async def execute(user: Username, body: bytes, content_type: str | None,
                      request: HTTPConnection) -> dict[str, object]:
        """A parsed and run API request: its Response's JSON. Raises ``RequestError``."""
        parsed = parse_request(body, content_type, ctx.limits, KNOWN)
        state = str(session_of(request, user)["state"])
        call_context = CallContext(user, ctx.services, ctx.limits, dict(parsed.created_ids or {}))
        response = await run_in_threadpool(engine.run, parsed, call_context, state)
        if parsed.created_ids is not None:   # given in the request: answered with what was created
            response = replace(response, created_ids=call_context.created_ids)
        return response.to_json()

    app.add_middleware(_Authentication, ctx=ctx)

    @app.get(WELL_KNOWN)
    async def autodiscovery() -> RedirectResponse:
        return RedirectResponse(SESSION, status_code=302)

    @app.get(SESSION)
    async def session_resource(request: Request) -> JSONResponse:
        return JSONResponse(session_of(request, request.state.user))

    @app.post("/jmap")
    async def api(request: Request) -> JSONResponse:
        user: Username = request.state.user
        try:
            with concurrent.slot(user):
                body = await _bounded_body(request, ctx.limits.max_size_request)
                response = await execute(user, body, request.headers.get("content-type"), request)
        except TooManyRequests:
            return problem(limit_exceeded("maxConcurrentRequests", "Too many requests of this user are running"))
        except RequestError as error:
            return problem(error)
        return JSONResponse(response)

    async def websocket_request(user: Username, body: bytes, websocket: WebSocket) -> dict[str, object]:
        try:
            with concurrent.slot(user):
                return await execute(user, body, "application/json", websocket)
        except TooManyRequests:
            raise limit_exceeded("maxConcurrentRequests", "Too many requests of this user are running") from None

    add_blob_routes(app, ctx.services, ctx.limits)
    if ctx.push is not None:
        add_event_source_route(app, ctx.push)
        add_websocket_route(app, ctx.push, lambda websocket: _authenticated(ctx, websocket), websocket_request)
    return app


class _Authentication:
    """Puts the user in ``request.state.user``, or answers the refusal. Plain ASGI, not
    ``BaseHTTPMiddleware``: that one cancels a streamed answer (EventSource) as soon as it starts."""

    def __init__(self, app: ASGIApp, ctx: JmapContext) -> None:
        self.app, self.ctx = app, ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == WELL_KNOWN:   # a WebSocket authenticates itself
            await self.app(scope, receive, send)
            return
        user = await _authenticated(self.ctx, Request(scope))
        if isinstance(user, Response):
            await user(scope, receive, send)
            return
        scope.setdefault("state", {})["user"] = user
        await self.app(scope, receive, send)


async def _authenticated(ctx: JmapContext, request: HTTPConnection) -> Username | Response:
    """The user, or the refusal: 401 with the accepted schemes, 429 while the client is throttled."""
    unauthorized = Response(status_code=401, headers={"WWW-Authenticate": ctx.authenticator.challenge})
    headers = dict(request.headers)
    if not ctx.authenticator.presented(headers):
        return unauthorized   # nothing guessed: not a failure
    address = request.client.host if request.client is not None else None
    async with ctx.throttle.attempt(PROTOCOL, ctx.authenticator.account_named(headers), address) as attempt:
        if attempt.refused:
            return Response(attempt.refusal + ".", status_code=429, media_type="text/plain",
                            headers={"Retry-After": str(attempt.retry_after)})
        # Password hashing and the users repository block: off the event loop.
        user = await run_in_threadpool(ctx.authenticator.authenticate, headers)
        if user is None:
            attempt.failed()
            return unauthorized
        attempt.succeeded()
        return user


async def _bounded_body(request: Request, limit: int) -> bytes:
    """The body, refused (maxSizeRequest) as soon as it is known to be too large: from its declared
    length, or while it is read, never held whole past the limit."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise limit_exceeded("maxSizeRequest", f"The request is larger than {limit} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise limit_exceeded("maxSizeRequest", f"The request is larger than {limit} bytes")
    return bytes(body)


