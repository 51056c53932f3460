"""``/sieve/quota`` (James's ``SieveQuotaRoutes``): the default and per-user size limits of Sieve scripts.

Bodies are a bare byte count (``102400``), read as Java's ``Long.parseLong``; GET answers the
number, or 204 when no limit is set; the per-user routes need an existing user (404).
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Request, Response

from mailserver.model.address import Username
from mailserver.sieve.quota import SieveQuotas
from mailserver.users.api import UsersRepository
from mailserver.webadmin.errors import bad_request, not_found
from mailserver.webadmin.routes.users import stored_username

NO_CONTENT = 204
LONG = re.compile(r"[+-]?[0-9]+")
LONG_MAX = 2**63 - 1


def router(quotas: SieveQuotas, users: UsersRepository) -> APIRouter:
    api = APIRouter(tags=["sieve"])

    def user(raw: str) -> Username:
        name = stored_username(users, raw)
        if not users.contains(name):
            raise not_found(f"User {name.value} does not exist")
        return name

    @api.get("/sieve/quota/default", summary="Default Sieve quota in bytes (204 when none)")
    def get_default() -> Response:
        return _limit(quotas.default())

    @api.put("/sieve/quota/default", status_code=NO_CONTENT, summary="Set the default Sieve quota (bytes)")
    async def put_default(request: Request) -> Response:
        quotas.set_default(_requested(await request.body()))
        return Response(status_code=NO_CONTENT)

    @api.delete("/sieve/quota/default", status_code=NO_CONTENT, summary="Remove the default Sieve quota")
    def delete_default() -> Response:
        quotas.remove_default()
        return Response(status_code=NO_CONTENT)

    @api.get("/sieve/quota/users/{username}", summary="A user's Sieve quota in bytes (204 when none)")
    def get_user(username: str) -> Response:
        return _limit(quotas.of(user(username)))

    @api.put("/sieve/quota/users/{username}", status_code=NO_CONTENT, summary="Set a user's Sieve quota (bytes)")
    async def put_user(username: str, request: Request) -> Response:
        name = user(username)
        quotas.set(name, _requested(await request.body()))
        return Response(status_code=NO_CONTENT)

    @api.delete("/sieve/quota/users/{username}", status_code=NO_CONTENT, summary="Remove a user's Sieve quota")
    def delete_user(username: str) -> Response:
        quotas.remove(user(username))
        return Response(status_code=NO_CONTENT)

    return api


def _limit(value: int | None) -> Response:
    if value is None:
        return Response(status_code=NO_CONTENT)
    return Response(str(value), status_code=200, media_type="application/json")


def _requested(body: bytes) -> int:
    text = body.decode("utf-8", "replace")
    if not LONG.fullmatch(text) or not -LONG_MAX - 1 <= int(text) <= LONG_MAX:
        raise bad_request(None, f"unrecognized integer number '{text}'")
    value = int(text)
    if value < 0:
        raise bad_request(None, "Requested quota size have to be a positive integer")
    return value
