"""``POST /users/{u}?action=deleteData``, ``POST /domains/{d}?action=deleteData`` and
``POST /users/{old}/rename/{new}?action=rename``: James's ``DeleteUserDataRoutes``,
``DomainsRoutes.deleteAllUsersData`` and ``UsernameChangeRoutes``, as in-process tasks
(``tasks.builtin.user_data``, ``username_change``) a worker of any node rebuilds from their
parameters."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.domains.api import DomainList
from mailserver.tasks.builtin.user_data import (
    DeleteUserDataTask,
    DeleteUsersDataOfDomainTask,
    UnknownStep,
    UserDataParts,
)
from mailserver.tasks.builtin.username_change import UsernameChangeTask
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import bad_request
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.domains import parse_domain
from mailserver.webadmin.routes.tasks import submitted
from mailserver.webadmin.routes.users import stored_username

DELETE_DATA, RENAME = "deleteData", "rename"


def router(parts: UserDataParts, domains: DomainList, tasks: TaskManager) -> APIRouter:
    api = APIRouter(tags=["user data"])

    @api.post("/users/{username}", status_code=201,
              summary="Task ?action=deleteData (DeleteUserDataTask): delete the user's mappings, delegations, "
                      "identities, vacation, mailboxes, rights on others' mailboxes and subscriptions; fromStep "
                      "resumes; force: unknown user")
    async def delete_user_data(username: str, request: Request) -> Response:
        params.selector(request.query_params.get("action"), "action", [DELETE_DATA])
        user = stored_username(parts.users, username)
        if "force" not in request.query_params and not await run_in_threadpool(parts.users.contains, user):
            raise bad_request("'username' parameter should be an existing user")
        try:
            task = DeleteUserDataTask(parts, user, request.query_params.get("fromStep"))
        except UnknownStep as exc:
            raise bad_request(str(exc)) from exc
        return submitted(await run_in_threadpool(tasks.submit, task))

    @api.post("/domains/{domain}", status_code=201,
              summary="Task ?action=deleteData (DeleteUsersDataOfDomainTask): deleteData for every user of the domain")
    async def delete_domain_users_data(domain: str, request: Request) -> Response:
        params.selector(request.query_params.get("action"), "action", [DELETE_DATA])
        name = parse_domain(domain)
        if not await run_in_threadpool(domains.contains, name):
            raise bad_request("'domainName' parameter should be an existing domain")
        return submitted(await run_in_threadpool(tasks.submit, DeleteUsersDataOfDomainTask(parts, name)))

    @api.post("/users/{old_user}/rename/{new_user}", status_code=201,
              summary="Task ?action=rename (UsernameChangeTask): move forwards, delegations, mailboxes, "
                      "subscriptions, rights on others' mailboxes and quota limits to the new name; "
                      "fromStep resumes; force: unknown old user")
    async def rename(old_user: str, new_user: str, request: Request) -> Response:
        params.selector(request.query_params.get("action"), "action", [RENAME])
        old, new = stored_username(parts.users, old_user), stored_username(parts.users, new_user)
        if "force" not in request.query_params and not await run_in_threadpool(parts.users.contains, old):
            raise bad_request("'oldUser' parameter should be an existing user")
        if not await run_in_threadpool(parts.users.contains, new):
            raise bad_request("'newUser' parameter should be an existing user")
        if old == new:
            raise bad_request("'newUser' should be distinct from 'oldUser'")
        try:
            task = UsernameChangeTask(parts, old, new, request.query_params.get("fromStep"))
        except UnknownStep as exc:
            raise bad_request(str(exc)) from exc
        return submitted(await run_in_threadpool(tasks.submit, task))

    return api
