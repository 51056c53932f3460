"""``/deletedMessages`` (webadmin reference §14, James's ``DeletedMessagesVaultRoutes``).

Browse (synchronous), restore and export by query, purge the expired months, delete one entry;
all but browse are tasks. Validation follows James's order: the ``action`` / ``scope`` selector
(case-sensitive), the user (400 when invalid, 404 when unknown unless ``force=true``), the
query body (400 "JSON payload of the request is not valid" / "Invalid payload passing to the
route"), then ``exportTo`` or the message id.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from mailserver.model.address import InvalidAddress, MailAddress, Username
from mailserver.model.ids import MessageId
from mailserver.model.java_numbers import loads
from mailserver.tasks.builtin.vault import (
    BlobStoreVaultGarbageCollectionTask,
    DeletedMessagesVaultDeleteTask,
    DeletedMessagesVaultExportTask,
    DeletedMessagesVaultRestoreTask,
    VaultParts,
)
from mailserver.tasks.manager import TaskManager
from mailserver.users.api import UsersRepository
from mailserver.vault.query import InvalidQuery, Query
from mailserver.webadmin.errors import WebAdminError, bad_request, not_found
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted

BASE = "/deletedMessages"
RESTORE, EXPORT, EXPIRED = "restore", "export", "expired"


def router(parts: VaultParts | None, users: UsersRepository, tasks: TaskManager | None) -> APIRouter:
    api = APIRouter(tags=["deleted messages vault"])

    def available() -> tuple[VaultParts, TaskManager]:
        if parts is None or tasks is None:
            raise WebAdminError(503, "The deleted messages vault is not available on this server",
                                type_="ServerError")
        return parts, tasks

    def user(request: Request, raw: str) -> Username:
        try:
            username = Username.of(raw)
        except InvalidAddress as exc:
            raise bad_request(str(exc), "Invalid 'user' parameter") from exc
        if (request.query_params.get("force") or "").lower() != "true" and not users.contains(username):
            raise not_found(f"User '{username}' does not exist in the system")
        return username

    @api.post(BASE + "/users/{username}/messages", summary="The user's vault entries matching the query body")
    async def browse(username: str, request: Request) -> Any:
        body = await request.body()   # the rest reads Cassandra: off the event loop

        def search() -> list[dict[str, Any]]:
            vault = available()[0].vault
            owner = user(request, username)
            return [m.descriptor() for m in vault.search(owner, parse_query(body))]
        return await run_in_threadpool(search)

    @api.post(BASE + "/users/{username}", summary="?action=restore|export (&exportTo=address): a task")
    async def user_action(username: str, request: Request) -> JSONResponse:
        body = await request.body()   # the rest reads and writes Cassandra: off the event loop

        def submit() -> JSONResponse:
            action = params.selector(request.query_params.get("action"), "action", [EXPORT, RESTORE])
            vault, manager = available()
            owner = user(request, username)
            query = parse_query(body)
            if action == RESTORE:
                return submitted(manager.submit(DeletedMessagesVaultRestoreTask(vault, owner, query)))
            return submitted(manager.submit(DeletedMessagesVaultExportTask(
                vault, owner, query, export_to(request.query_params.get("exportTo")))))
        return await run_in_threadpool(submit)

    @api.delete(BASE, summary="?scope=expired: purge the months older than the retention period (a task)")
    def purge(request: Request) -> JSONResponse:
        params.selector(request.query_params.get("scope"), "scope", [EXPIRED])
        vault, manager = available()
        return submitted(manager.submit(BlobStoreVaultGarbageCollectionTask(vault)))

    @api.delete(BASE + "/users/{username}/messages/{message_id}", summary="Delete one vault entry (a task)")
    def delete_one(username: str, message_id: str, request: Request) -> JSONResponse:
        vault, manager = available()
        owner = user(request, username)
        try:
            parsed = MessageId.of(message_id)
        except ValueError as exc:
            raise bad_request(str(exc), f"Can not deserialize the supplied messageId: {message_id}") from exc
        return submitted(manager.submit(DeletedMessagesVaultDeleteTask(vault, owner, parsed)))

    return api


def parse_query(body: bytes) -> Query:
    try:
        payload = loads(body)   # an integer of thousands of digits stays text: Query.parse names the field
    except ValueError as exc:
        raise bad_request(str(exc), "JSON payload of the request is not valid") from exc
    try:
        return Query.parse(payload)
    except InvalidQuery as exc:
        raise bad_request(str(exc), "Invalid payload passing to the route") from exc


def export_to(raw: str | None) -> MailAddress:
    if raw is None or not raw.strip():
        raise bad_request(None, "Invalid 'exportTo' parameter, null or blank value is not accepted")
    try:
        return MailAddress.of(raw)
    except InvalidAddress as exc:
        raise bad_request(str(exc), "Invalid 'exportTo' parameter") from exc
