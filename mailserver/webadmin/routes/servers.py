"""``/servers/channels`` and ``/servers/connectedUsers`` (James's ``ProtocolServerRoutes``): the IMAP
and SMTP sessions of this node, listed with James's channel descriptions and closed on request;
``POST /servers?reload-certificate`` loads the TLS key pair of this node's servers again.

Only this node's sessions: James's distributed disconnector also tells the other nodes (through
RabbitMQ); here each node is asked on its own WebAdmin.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from mailserver.model.address import InvalidAddress, Username
from mailserver.serving.connections import ConnectionDescription, ConnectionRegistry
from mailserver.webadmin.errors import NOT_FOUND, WebAdminError, bad_request

NO_CONTENT = 204
SPECIFIC = "protocolSpecificInformation."
ULONG_MAX = 2**64 - 1


def router(connections: ConnectionRegistry) -> APIRouter:
    api = APIRouter(tags=["servers"])

    @api.post("/servers", status_code=NO_CONTENT,
              summary="?reload-certificate[&port=N]: load the TLS key pair of this node's SMTP and IMAP servers "
                      "again (new handshakes use it; open sessions keep theirs)")
    async def reload_certificates(request: Request) -> Response:
        if "reload-certificate" not in request.query_params:
            raise bad_request("'reload-certificate' query parameter shall be specified")
        port = _port(request.query_params.get("port"))
        servers = connections.reloadable()
        if not servers:
            raise WebAdminError(400, "No servers configured, nothing to reload", type_=NOT_FOUND)
        for server in servers:
            if port is None or server.port == port:
                await run_in_threadpool(server.reload_certificate)
        return Response(status_code=NO_CONTENT)

    @api.get("/servers/channels", summary="Every IMAP and SMTP session of this node")
    def channels(limit: str | None = Query(None), offset: str | None = Query(None),
                 sortBy: str | None = Query(None), sortDirection: str | None = Query(None),
                 sortType: str | None = Query(None)) -> JSONResponse:
        listed = [_dto(c) for c in connections.describe()]
        return JSONResponse(_page(listed, limit, offset, sortBy, sortDirection, sortType))

    @api.get("/servers/channels/{user}", summary="The sessions of one user on this node")
    def channels_of(user: str, limit: str | None = Query(None), offset: str | None = Query(None),
                    sortBy: str | None = Query(None), sortDirection: str | None = Query(None),
                    sortType: str | None = Query(None)) -> JSONResponse:
        name = _username(user)
        listed = [_dto(c) for c in connections.describe() if c.username == name]
        return JSONResponse(_page(listed, limit, offset, sortBy, sortDirection, sortType))

    @api.get("/servers/connectedUsers", summary="Users with a session open on this node")
    def connected() -> list[str]:
        return list(dict.fromkeys(c.username for c in connections.describe() if c.username is not None))

    @api.delete("/servers/channels/{user}", status_code=NO_CONTENT, summary="Close the sessions of one user")
    def disconnect_user(user: str) -> Response:
        connections.disconnect(frozenset({_username(user)}))
        return Response(status_code=NO_CONTENT)

    @api.delete("/servers/channels", status_code=NO_CONTENT,
                summary="Close every session, or those of the users listed in the body")
    async def disconnect(request: Request) -> Response:
        body = await request.body()
        connections.disconnect(None if not body else _usernames(body))
        return Response(status_code=NO_CONTENT)

    return api


def _username(raw: str) -> str:
    try:
        return Username.of(raw).value
    except InvalidAddress as exc:
        raise bad_request(str(exc)) from exc


def _usernames(body: bytes) -> frozenset[str]:
    try:
        names = json.loads(body)
    except ValueError as exc:
        raise bad_request(str(exc)) from exc
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise bad_request("the body must be a JSON array of user names")
    return frozenset(_username(n) for n in names)


def _dto(c: ConnectionDescription) -> dict[str, Any]:
    """James's ``ConnectionDescriptionDTO``: its field order, absent values as null."""
    return {"protocol": c.protocol, "endpoint": c.endpoint, "remoteAddress": c.remote_address,
            "connectionDate": _instant(c.connection_date), "isActive": c.is_active, "isOpen": c.is_open,
            "isWritable": c.is_writable, "isEncrypted": c.is_encrypted, "username": c.username,
            "protocolSpecificInformation": dict(c.protocol_specific)}


def _instant(when: dt.datetime | None) -> str | None:
    """Java's ``Instant.toString()``: UTC, ``Z``, the fraction in groups of three digits, none when zero."""
    if when is None:
        return None
    text = when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    micros = when.microsecond
    if not micros:
        return text + "Z"
    fraction = f"{micros:06d}"
    return f"{text}.{fraction[:3] if fraction.endswith('000') else fraction}Z"


def _port(raw: str | None) -> int | None:
    """James's ``Port.of(Integer.parseUnsignedInt(...))``: 1 to 65535."""
    if raw is None:
        return None
    if not raw.isdigit() or not 0 < int(raw) <= 65535:
        raise bad_request(f"Invalid port: '{raw}'")
    return int(raw)


def _page(listed: list[dict[str, Any]], limit: str | None, offset: str | None, sort_by: str | None,
          direction: str | None, sort_type: str | None) -> list[dict[str, Any]]:
    """James's ``ChannelsQueryParameters``: sort (stable), then skip ``offset``, then keep ``limit``."""
    first, count = _unsigned(offset, "offset") or 0, _unsigned(limit, "limit")
    descending = _choice(direction, ("ASC", "DESC"), "sortDirection", "ASC") == "DESC"
    numerical = _choice(sort_type, ("NUMERICAL", "ALPHABETICAL"), "sortType", "ALPHABETICAL") == "NUMERICAL"
    if sort_by is not None:
        def key(dto: dict[str, Any]) -> Any:
            text = _field(dto, sort_by)
            return _long(text) if numerical else text
        listed = sorted(listed, key=key, reverse=descending)
    listed = listed[first:]
    return listed if count is None else listed[:count]


def _field(dto: dict[str, Any], path: str) -> str:
    if path.startswith(SPECIFIC):
        return str(dto["protocolSpecificInformation"].get(path[len(SPECIFIC):], ""))
    value = dto.get(path) if path != "protocolSpecificInformation" else None
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _long(text: str) -> int:
    try:
        return int(text) if text.lstrip("+-").isdigit() else 0
    except ValueError:
        return 0


def _unsigned(raw: str | None, name: str) -> int | None:
    if raw is None:
        return None
    if not raw.isascii() or not raw.lstrip("+").isdigit() or int(raw) > ULONG_MAX:
        raise bad_request(f"'{name}' must be an unsigned long, got '{raw}'")
    return int(raw)


def _choice(raw: str | None, allowed: tuple[str, ...], name: str, default: str) -> str:
    if raw is None:
        return default
    if raw.upper() not in allowed:
        raise bad_request(f"'{name}' must be one of {', '.join(a.lower() for a in allowed)}, got '{raw}'")
    return raw.upper()
