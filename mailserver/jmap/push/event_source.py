"""``GET /eventSource`` (RFC 8620 7.3): the user's state changes as server-sent events.

James's parameters, all required: ``types`` (``*`` or type names separated by commas),
``closeAfter`` (``state``: close after the first StateChange; ``no``; the RFC's lower-case
``closeafter`` is read too) and ``ping`` (seconds between ``ping`` events, 0: none; clamped to
``PushLimits``). Each event is ``event: state|ping``, then ``data:`` and its JSON, as James writes it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import StreamingResponse

from mailserver.jmap.blob_routes import problem
from mailserver.jmap.errors import RequestError, limit_exceeded
from mailserver.jmap.push.hub import PushHub, TooManyConnections
from mailserver.model.state_change import TYPE_NAMES

EVENT_SOURCE = "/eventSource"
INVALID_ARGUMENTS = "about:blank"


@dataclass(frozen=True)
class EventSourceOptions:
    types: frozenset[str]
    close_after_state: bool
    ping: int   # seconds, 0: no ping

    @classmethod
    def parse(cls, query: Mapping[str, str]) -> EventSourceOptions:
        """The options, or a 400 ``RequestError`` saying which parameter is wrong (as James)."""
        types, ping = query.get("types"), query.get("ping")
        close_after = query.get("closeAfter", query.get("closeafter"))
        if types is None:
            raise _invalid("types parameter is compulsory")
        if ping is None:
            raise _invalid("ping parameter is compulsory")
        if close_after is None:
            raise _invalid("closeAfter parameter is compulsory")
        if close_after not in ("state", "no"):
            raise _invalid(f"{close_after} is not a supported value for eventSource closeAfter parameter")
        if not ping.isdigit():
            raise _invalid(f"ping must be a positive integer or 0, got {ping!r}")
        names = frozenset(TYPE_NAMES) if types == "*" else frozenset(types.split(","))
        unknown = sorted(names - set(TYPE_NAMES))
        if unknown:
            raise _invalid(f"Unknown typeName {unknown[0]}")
        return cls(names, close_after == "state", int(ping))


def _invalid(detail: str) -> RequestError:
    return RequestError(INVALID_ARGUMENTS, detail)


def sse(event: str, data: Mapping[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def add_event_source_route(app: FastAPI, hub: PushHub) -> None:
    @app.get(EVENT_SOURCE)
    async def event_source(request: Request) -> Response:
        try:
            options = EventSourceOptions.parse(request.query_params)
        except RequestError as error:
            return problem(error)
        if hub.refusal(request.state.user) is not None:
            return problem(limit_exceeded("maxPushConnections", "Too many push connections are open"))
        return StreamingResponse(_events(hub, request, options), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "Connection": "keep-alive"})


async def _events(hub: PushHub, request: Request, options: EventSourceOptions) -> AsyncIterator[str]:
    ping = hub.limits.clamp_ping(options.ping)
    try:
        async with hub.connect(request.state.user, options.types) as stream:
            yield ": connected\n\n"   # a comment: headers and a first byte reach the client at once
            while True:
                change = await stream.next(ping or None)
                if change is None:
                    yield sse("ping", {"interval": ping})
                    continue
                yield sse("state", change)
                if options.close_after_state:
                    return
    except TooManyConnections:   # lost a race with another connection
        return
