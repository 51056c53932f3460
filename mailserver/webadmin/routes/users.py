"""``/users`` (webadmin reference §5): list, exists, create / upsert, verify, delete."""

from __future__ import annotations

from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, ConfigDict, StrictStr

from mailserver.model.address import Domain, InvalidAddress, MailAddress, Username
from mailserver.rrt.api import RecipientRewriteTable
from mailserver.rrt.mapping import Mapping
from mailserver.users.api import (
    InvalidPassword,
    UnknownDomain,
    UserAlreadyExists,
    UserNotFound,
    UsersRepository,
)
from mailserver.webadmin import validation
from mailserver.webadmin.errors import WebAdminError, bad_request, conflict, not_found

NO_CONTENT = 204


class PasswordBody(BaseModel):
    # Strict: a number or null is a malformed request, not a password.
    model_config = ConfigDict(extra="forbid")
    password: StrictStr


def parse_username(raw: str) -> Username:
    """Lenient: finds (and deletes) names stored before ``validation`` existed."""
    try:
        return Username.of(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc)) from exc


def stored_username(users: UsersRepository, raw: str) -> Username:
    """Lenient, and the spelling the user is stored under: a Unicode domain part is stored in its
    IDNA form (``new_username``), a name stored before that keeps its Unicode one."""
    user = parse_username(raw)
    local, at, domain = user.value.rpartition("@")
    if not at or domain.isascii() or users.contains(user):
        return user
    try:
        return Username.of(f"{local}@{Domain.of(domain).name}")
    except InvalidAddress:
        return user


def new_username(raw: str) -> Username:
    """Strict: a name about to be stored (``validation.username``)."""
    try:
        return validation.username(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc)) from exc


def router(users: UsersRepository, rrt: RecipientRewriteTable) -> APIRouter:
    api = APIRouter(tags=["users"])

    @api.get("/users", summary="List users")
    def list_users() -> list[dict[str, str]]:
        return [{"username": u.value} for u in users.list_users()]

    @api.head("/users/{username}", summary="200 if the user exists, 404 otherwise")
    def exists(username: str) -> Response:
        user = stored_username(users, username)
        if not users.contains(user):
            raise not_found(f"User {user} does not exist")
        return Response(status_code=200)

    @api.put("/users/{username}", status_code=NO_CONTENT,
             summary="Create a user (409 if present); with ?force create or change the password")
    def put_user(username: str, body: PasswordBody, force: str | None = Query(None)) -> Response:
        user = new_username(username)
        try:
            if force is not None and users.contains(user):
                users.update_password(user, body.password)
            else:
                users.add_user(user, body.password)
        except UserAlreadyExists as exc:
            raise conflict("User already exists", str(exc)) from exc
        except (UnknownDomain, InvalidPassword, InvalidAddress) as exc:
            raise bad_request(str(exc)) from exc
        except UserNotFound as exc:   # removed between contains and update: report, do not guess
            raise WebAdminError(409, "User was removed concurrently", str(exc)) from exc
        return Response(status_code=NO_CONTENT)

    @api.post("/users/{username}/verify", status_code=NO_CONTENT, summary="204 if the password is right, else 401")
    def verify(username: str, body: PasswordBody) -> Response:
        user = stored_username(users, username)
        if not users.verify(user, body.password):
            # Same answer for an unknown user and a wrong password (James).
            raise WebAdminError(401, "Wrong credentials", None, "InvalidArgument")
        return Response(status_code=NO_CONTENT)

    @api.delete("/users/{username}", status_code=NO_CONTENT, summary="Delete a user (204 even if absent)")
    def delete(username: str) -> Response:
        user = stored_username(users, username)
        try:
            users.remove_user(user)
        except UserNotFound:
            pass
        return Response(status_code=NO_CONTENT)

    @api.get("/users/{username}/allowedFromHeaders", summary="Addresses the user may send as")
    def allowed_from(username: str) -> list[str]:
        user = stored_username(users, username)
        if not users.contains(user):
            raise not_found(f"User {user} does not exist")
        try:
            address = MailAddress.of(user.value)
        except InvalidAddress:
            return [user.value]
        aliases = [s.as_string() for s in rrt.list_sources(Mapping.alias(address)) if s.as_mail_address()]
        return [user.value, *sorted(set(aliases) - {user.value})]

    return api
