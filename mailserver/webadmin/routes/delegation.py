"""``/users/{baseUser}/authorizedUsers`` (James's ``UserRoutes``, delegation): list, add, remove, clear.

James answers 200 with an empty JSON body on writes, 404 when the base user does not exist (the
delegate need not exist), and 405 where no delegation store is configured.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from mailserver.model.address import Username
from mailserver.users.api import UsersRepository
from mailserver.users.delegation import DelegationStore
from mailserver.webadmin.errors import WebAdminError, not_found
from mailserver.webadmin.routes.users import new_username, stored_username

OK = 200


def router(users: UsersRepository, delegation: DelegationStore | None) -> APIRouter:
    api = APIRouter(tags=["users"])

    def store() -> DelegationStore:
        if delegation is None:
            raise WebAdminError(405, "This version of James does not support delegation.", None, "InvalidArgument")
        return delegation

    def existing(user: Username) -> Username:
        if not users.contains(user):
            raise not_found(f"User '{user.value}' does not exist")
        return user

    def base_user(raw: str) -> Username:
        return existing(stored_username(users, raw))

    @api.get("/users/{base}/authorizedUsers", summary="Users allowed to act as this one")
    def authorized(base: str) -> list[str]:
        return [u.value for u in store().authorized_users(base_user(base))]

    @api.delete("/users/{base}/authorizedUsers", summary="Remove every delegate of this user")
    def clear(base: str) -> Response:
        store().clear(base_user(base))
        return _empty()

    @api.put("/users/{base}/authorizedUsers/{delegate}", summary="Let a user act as this one")
    def add(base: str, delegate: str) -> Response:
        owner, target = stored_username(users, base), new_username(delegate)   # both names checked first (James)
        store().add_authorized_user(existing(owner), target)
        return _empty()

    @api.delete("/users/{base}/authorizedUsers/{delegate}", summary="Stop a user acting as this one")
    def remove(base: str, delegate: str) -> Response:
        owner, target = stored_username(users, base), stored_username(users, delegate)
        store().remove_authorized_user(existing(owner), target)
        return _empty()

    return api


def _empty() -> Response:
    return Response(status_code=OK, media_type="application/json")
