"""JMAP over WebSocket (RFC 8887) at ``/jmap/ws``, James's path, with the ``jmap`` subprotocol.

Text messages in: ``Request`` (answered ``Response``, or ``RequestError`` with its
``requestId``), ``WebSocketPushEnable`` (``dataTypes``: the types to push, null for all) and
``WebSocketPushDisable``. Out, besides the answers: ``StateChange`` objects while push is enabled.
Requests of one socket run one after the other; pushes go out between them, through the same
bounded queue as EventSource (a client that does not read loses old changes, never memory). The
upgrade is authenticated as every JMAP route; a refusal closes the handshake (policy violation).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from fastapi import FastAPI, WebSocket, WebSocketDisconnect
from fastapi.responses import Response

from mailserver.jmap.errors import NOT_REQUEST, RequestError, limit_exceeded
from mailserver.jmap.push.hub import PushHub, TooManyConnections
from mailserver.model.address import Username
from mailserver.model.state_change import TYPE_NAMES

WEBSOCKET_PATH = "/jmap/ws"
SUBPROTOCOL = "jmap"
POLICY_VIOLATION = 1008

# (user, the Request's JSON, the connection) -> the Response's JSON; raises RequestError.
RunRequest = Callable[[Username, bytes, WebSocket], Awaitable[dict[str, Any]]]
Authenticate = Callable[[WebSocket], Awaitable[Username | Response]]


def add_websocket_route(app: FastAPI, hub: PushHub, authenticate: Authenticate, run: RunRequest) -> None:
    @app.websocket(WEBSOCKET_PATH)
    async def jmap_websocket(websocket: WebSocket) -> None:
        user = await authenticate(websocket)
        if isinstance(user, Response):
            await websocket.close(code=POLICY_VIOLATION)
            return
        offered = websocket.scope.get("subprotocols") or []
        await websocket.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in offered else None)
        await _Connection(websocket, user, hub, run).serve()


class _Connection:
    def __init__(self, websocket: WebSocket, user: Username, hub: PushHub, run: RunRequest) -> None:
        self.websocket, self.user, self.hub, self.run = websocket, user, hub, run
        self.sending = asyncio.Lock()
        self.push: asyncio.Task[None] | None = None

    async def serve(self) -> None:
        try:
            while True:
                text = await self.websocket.receive_text()
                answer = await self.answer(text)
                if answer is not None:
                    await self.send(answer)
        except WebSocketDisconnect:
            pass
        finally:
            await self.disable_push()

    async def answer(self, text: str) -> dict[str, Any] | None:
        try:
            message = json.loads(text)
        except ValueError:
            return _request_error(None, RequestError(NOT_REQUEST, "The message is not JSON"))
        if not isinstance(message, dict):
            return _request_error(None, RequestError(NOT_REQUEST, "The message is not a JSON object"))
        kind = message.get("@type")
        if kind == "Request":
            return await self.request(message)
        if kind == "WebSocketPushEnable":
            data_types = message.get("dataTypes")
            if data_types is not None and not (isinstance(data_types, list)
                                               and all(isinstance(t, str) for t in data_types)):
                return _request_error(None, RequestError(NOT_REQUEST, "dataTypes must be null or a list of type names"))
            return await self.enable_push(TYPE_NAMES if data_types is None else data_types)
        if kind == "WebSocketPushDisable":
            await self.disable_push()
            return None
        return _request_error(None, RequestError(NOT_REQUEST, f"Unknown @type field on a webSocket inbound message: "
                                                              f"{kind}"))

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        request_id = message.get("id")
        body = {k: v for k, v in message.items() if k not in ("@type", "id")}
        try:
            response = await self.run(self.user, json.dumps(body).encode(), self.websocket)
        except RequestError as error:
            return _request_error(request_id, error)
        return {"@type": "Response", "requestId": request_id, **response}

    async def enable_push(self, types: Collection[str]) -> dict[str, Any] | None:
        await self.disable_push()   # enabling again replaces the types pushed
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.push = asyncio.create_task(self._push(frozenset(types), ready))
        try:
            await ready
        except TooManyConnections as exc:
            self.push = None
            return _request_error(None, limit_exceeded("maxPushConnections", str(exc)))
        return None

    async def disable_push(self) -> None:
        task, self.push = self.push, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError):
                await task

    async def _push(self, types: frozenset[str], ready: asyncio.Future[None]) -> None:
        try:
            async with self.hub.connect(self.user, types) as stream:
                ready.set_result(None)
                while True:
                    change = await stream.next(None)
                    if change is not None:
                        await self.send(change)
        except Exception as exc:
            if ready.done():
                raise
            ready.set_exception(exc)   # not connected: ``enable_push`` answers it

    async def send(self, message: dict[str, Any]) -> None:
        async with self.sending:
            await self.websocket.send_text(json.dumps(message, separators=(",", ":")))


def _request_error(request_id: Any, error: RequestError) -> dict[str, Any]:
    return {"@type": "RequestError", "requestId": request_id, **error.problem()}
