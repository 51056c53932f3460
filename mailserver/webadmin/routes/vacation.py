"""``/vacation/{user}`` (James's ``VacationRoutes``): a user's vacation settings.

GET answers James's ``VacationDTO`` (every field, null when not set; dates as ISO-8601 with their
offset, ``Z`` for UTC); POST patches the settings (a field absent is kept) and answers 204;
DELETE disables and clears them (204). An unknown user is 404 ``The user '...' does not exist``;
a body that is not a JSON object, an unknown field or a value of the wrong type is 400 ``JSON
payload of the request is not valid``, nothing written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.model.address import Username
from mailserver.users.api import UsersRepository
from mailserver.vacation.api import CLEARED, Vacation, VacationRepository
from mailserver.webadmin.errors import bad_request, not_found
from mailserver.webadmin.json_payload import INVALID_JSON, json_object
from mailserver.webadmin.routes.users import stored_username

NO_CONTENT = 204
# JSON name -> field of Vacation, in James's DTO order.
JSON_FIELDS = {"enabled": "enabled", "fromDate": "from_date", "toDate": "to_date", "subject": "subject",
               "textBody": "text_body", "htmlBody": "html_body"}
DATES = frozenset({"fromDate", "toDate"})


def as_json(vacation: Vacation) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in JSON_FIELDS.items():
        value = getattr(vacation, field)
        out[name] = _iso(value) if isinstance(value, datetime) else value
    return out


def patch_of(body: bytes) -> dict[str, object]:
    """James's ``updateOrKeep``: a field given replaces the stored one; absent or null (Jackson's
    empty Optional) keeps it."""
    document = json_object(body)
    unknown = sorted(set(document) - set(JSON_FIELDS))
    if unknown:
        raise bad_request(f"unknown fields: {unknown}", INVALID_JSON)
    patch: dict[str, object] = {}
    for name, value in document.items():
        if value is None:
            continue
        patch[JSON_FIELDS[name]] = _value(name, value)
    return patch


def _value(name: str, value: object) -> object:
    if name == "enabled":
        if not isinstance(value, bool):
            raise bad_request(f"'{name}' is a boolean", INVALID_JSON)
        return value
    if not isinstance(value, str):
        raise bad_request(f"'{name}' is a string", INVALID_JSON)
    if name not in DATES:
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise bad_request(f"'{name}' is an ISO-8601 date with its offset: {value!r}", INVALID_JSON)
    return moment


def _iso(moment: datetime) -> str:
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def router(vacations: VacationRepository, users: UsersRepository) -> APIRouter:
    api = APIRouter(tags=["vacation"])

    def existing(raw: str) -> Username:
        user = stored_username(users, raw)
        if not users.contains(user):
            raise not_found(f"The user '{user.value}' does not exist")
        return user

    @api.get("/vacation/{username}", summary="A user's vacation settings (James's VacationDTO)")
    def get_vacation(username: str) -> dict[str, Any]:
        return as_json(vacations.get(existing(username).value))

    @api.post("/vacation/{username}", status_code=NO_CONTENT,
              summary="Update a user's vacation settings: the fields given replace the stored ones")
    async def update_vacation(username: str, request: Request) -> Response:
        user = await run_in_threadpool(existing, username)
        patch = patch_of(await request.body())
        await run_in_threadpool(vacations.modify, user.value, patch)
        return Response(status_code=NO_CONTENT)

    @api.delete("/vacation/{username}", status_code=NO_CONTENT, summary="Disable and clear a user's vacation")
    def delete_vacation(username: str) -> Response:
        vacations.modify(existing(username).value, CLEARED)
        return Response(status_code=NO_CONTENT)

    return api


