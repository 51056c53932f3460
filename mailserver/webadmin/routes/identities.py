"""``/users/{user}/identities`` (James's ``UserIdentityRoutes``): a user's JMAP identities.

GET lists the server-set and stored identities as James's ``UserIdentity`` (``?default=true``: the
deletable one of lowest sort order, 404 ``Default identity can not be found`` without one); POST
stores a new identity (201; its email must be one the user may send from); PUT changes one
(204; the name, signatures and sort order given, ``replyTo`` and ``bcc`` replaced, absent =
none, as James); DELETE removes a stored one (204; a server-set one is 403).
"""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.identities.api import DEFAULT_SORT_ORDER, EmailAddress, Identity
from mailserver.identities.repository import (
    ForbiddenDelete,
    ForbiddenSendFrom,
    IdentityNotFound,
    IdentityRepository,
    default_identity,
)
from mailserver.model.address import InvalidAddress, MailAddress, Username
from mailserver.users.api import UsersRepository
from mailserver.webadmin.errors import INVALID_ARGUMENT, WebAdminError, bad_request, not_found
from mailserver.webadmin.json_payload import INVALID_JSON, json_object
from mailserver.webadmin.routes.users import stored_username

TEXT_FIELDS = {"name": "name", "textSignature": "text_signature", "htmlSignature": "html_signature"}
FIELDS = frozenset({*TEXT_FIELDS, "email", "sortOrder", "bcc", "replyTo"})


def as_json(identity: Identity) -> dict[str, Any]:
    return {"name": identity.name, "email": identity.email, "id": str(identity.id), "mayDelete": identity.may_delete,
            "textSignature": identity.text_signature, "htmlSignature": identity.html_signature,
            "sortOrder": identity.sort_order, "bcc": _addresses_json(identity.bcc),
            "replyTo": _addresses_json(identity.reply_to)}


def _addresses_json(addresses: tuple[EmailAddress, ...] | None) -> list[dict[str, str | None]]:
    return [{"name": a.name, "email": a.email} for a in addresses or ()]


def upsert_of(body: bytes) -> dict[str, Any]:
    """James's ``UserIdentityUpsert``: unknown fields are ignored; a wrong type or an invalid
    address is 400 ``JSON payload of the request is not valid``."""
    document = json_object(body)
    out: dict[str, Any] = {}
    for name in FIELDS & set(document):
        value = document[name]
        if value is None:
            continue
        if name in ("bcc", "replyTo"):
            out[name] = _addresses(name, value)
        elif name == "sortOrder":
            if not isinstance(value, int) or isinstance(value, bool) or not -2**31 <= value < 2**31:
                raise bad_request("'sortOrder' is a 32-bit integer", INVALID_JSON)
            out[name] = value
        elif not isinstance(value, str):
            raise bad_request(f"'{name}' is a string", INVALID_JSON)
        else:
            out[name] = value
    return out


def _addresses(field: str, value: object) -> tuple[EmailAddress, ...]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise bad_request(f"'{field}' is a list of {{name, email}}", INVALID_JSON)
    try:
        return tuple(EmailAddress(str(MailAddress.of(str(v.get("email")))), v.get("name")) for v in value)
    except InvalidAddress as exc:
        raise bad_request(str(exc), INVALID_JSON) from exc


def identity_id_of(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise bad_request(f"Can not parse identityId: '{raw}'") from None


def router(identities: IdentityRepository, users: UsersRepository) -> APIRouter:
    api = APIRouter(tags=["users"])

    def user_of(raw: str) -> Username:
        return stored_username(users, raw)

    @api.get("/users/{username}/identities",
             summary="A user's JMAP identities, server-set and stored (?default=true: the default one)")
    def list_identities(username: str, request: Request) -> list[dict[str, Any]]:
        raw = request.query_params.get("default")
        if raw is not None and raw.lower() not in ("true", "false"):
            raise bad_request("Invalid 'default' query parameter")
        every = identities.list(user_of(username))
        if raw is not None and raw.lower() == "true":
            chosen = default_identity(every)
            if chosen is None:
                raise not_found("Default identity can not be found")
            every = [chosen]
        return [as_json(identity) for identity in every]

    @api.post("/users/{username}/identities", status_code=201, summary="Store a new JMAP identity of the user")
    async def create_identity(username: str, request: Request) -> Response:
        upsert = upsert_of(await request.body())
        if "email" not in upsert:
            raise bad_request("email must be not null")
        try:
            email = str(MailAddress.of(upsert["email"]))
        except InvalidAddress as exc:
            raise bad_request(str(exc), INVALID_JSON) from exc
        identity = Identity(uuid.uuid4(), email, name=upsert.get("name", ""), reply_to=upsert.get("replyTo"),
                            bcc=upsert.get("bcc"), text_signature=upsert.get("textSignature", ""),
                            html_signature=upsert.get("htmlSignature", ""),
                            sort_order=upsert.get("sortOrder", DEFAULT_SORT_ORDER))
        try:
            await run_in_threadpool(identities.create, user_of(username), identity)
        except ForbiddenSendFrom:
            raise bad_request(f"{username} can not send from {email}",
                              "Invalid argument while creating identity") from None
        return Response(status_code=201)

    @api.put("/users/{username}/identities/{identity_id}", status_code=204, summary="Change a JMAP identity")
    async def update_identity(username: str, identity_id: str, request: Request) -> Response:
        wanted = identity_id_of(identity_id)
        upsert = upsert_of(await request.body())
        changes: dict[str, object] = {TEXT_FIELDS[k]: v for k, v in upsert.items() if k in TEXT_FIELDS}
        if "sortOrder" in upsert:
            changes["sort_order"] = upsert["sortOrder"]
        changes["reply_to"] = upsert.get("replyTo")   # absent clears it, as James's update request
        changes["bcc"] = upsert.get("bcc")
        try:
            await run_in_threadpool(identities.update, user_of(username), wanted, changes)
        except IdentityNotFound:
            raise not_found(f"IdentityId '{wanted}' can not be found") from None
        return Response(status_code=204)

    @api.delete("/users/{username}/identities/{identity_id}", status_code=204,
                summary="Delete a stored JMAP identity (a server-set one: 403)")
    def delete_identity(username: str, identity_id: str) -> Response:
        wanted = identity_id_of(identity_id)
        try:
            identities.delete(user_of(username), [wanted])
        except ForbiddenDelete:
            raise WebAdminError(403, f"IdentityId '{wanted}' can not be deleted", type_=INVALID_ARGUMENT) from None
        return Response(status_code=204)

    return api
