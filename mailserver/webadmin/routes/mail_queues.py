"""``/mailQueues`` (webadmin reference §12): list, size, browse, delete / clear (tasks), flush, republish,
browse-start update (task).

The flush is served on ``/mailQueues/{q}/mails?delayed=true`` (James's code and tests) and on
``/mailQueues/{q}?delayed=true`` (its docs). Deletions and clears are tasks.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.model.address import InvalidAddress, MailAddress
from mailserver.model.java_numbers import loads
from mailserver.queue.api import MailQueue, MailQueueFactory, QueueItemView, RemoveField
from mailserver.tasks.api import format_instant
from mailserver.tasks.builtin.mailqueue import (
    BrowseStartUpdateTask,
    ClearMailQueueTask,
    DeleteMailsFromMailQueueTask,
    RepublishNotProcessedMailsTask,
)
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import WebAdminError, bad_request, not_found
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted

NO_CONTENT = 204
REPUBLISH = "RepublishNotProcessedMails"
UPDATE_BROWSE_START = "updateBrowseStart"


def router(queues: MailQueueFactory, tasks: TaskManager | None) -> APIRouter:
    api = APIRouter(tags=["mail queues"])

    def existing(name: str) -> MailQueue:
        if name not in queues.list_names():
            raise not_found(f"{name} can not be found")
        return queues.get(name)

    @api.get("/mailQueues", summary="Names of the mail queues")
    def list_queues() -> list[str]:
        return queues.list_names()

    @api.get("/mailQueues/{name}", summary="A queue and its size")
    def get_queue(name: str) -> dict[str, Any]:
        return {"name": name, "size": existing(name).browse_size()}

    @api.get("/mailQueues/{name}/mails", summary="Browse a queue (?limit, ?delayed=true|false)")
    def browse(name: str, request: Request) -> list[dict[str, Any]]:
        count = params.limit(request.query_params.get("limit"))
        delayed = request.query_params.get("delayed")
        queue = existing(name)
        items: list[QueueItemView] = []
        for item in queue.browse():   # limit applies while browsing, before the delayed filter (James)
            if count is not None and len(items) >= count:
                break
            items.append(item)
        now = datetime.now(UTC)
        if delayed is not None:
            wanted = delayed.lower() == "true"   # Boolean.parseBoolean: anything else is false
            items = [i for i in items if (i.next_delivery is not None and i.next_delivery > now) == wanted]
        return [_item(i) for i in items]

    @api.patch("/mailQueues/{name}/mails", status_code=NO_CONTENT,
               summary="Flush: ?delayed=true with {\"delayed\": false} delivers delayed mails now")
    async def flush(name: str, request: Request) -> Response:
        return await _flush(name, request)

    @api.patch("/mailQueues/{name}", status_code=NO_CONTENT,
               summary="Flush: ?delayed=true with {\"delayed\": false} (the path of James's docs)")
    async def flush_documented(name: str, request: Request) -> Response:
        return await _flush(name, request)

    async def _flush(name: str, request: Request) -> Response:
        if (request.query_params.get("delayed") or "").lower() != "true":
            raise bad_request(None, "This request requires delayed param to be set to true")
        body = await request.body()
        try:
            payload = loads(body or b"null")
        except ValueError as exc:
            raise bad_request(str(exc), f"Invalid JSON document: {exc}") from exc
        if not isinstance(payload, dict) or set(payload) - {"delayed"} or \
                not isinstance(payload.get("delayed", False), bool):
            raise bad_request(None, f"Invalid JSON document: {body.decode(errors='replace')}")
        if payload.get("delayed", True):
            raise bad_request(None, "This request requires payload to contain delayed attribute set to false")
        queue = await run_in_threadpool(existing, name)
        await run_in_threadpool(queue.flush)
        return Response(status_code=NO_CONTENT)

    if tasks is None:
        return api

    @api.delete("/mailQueues/{name}/mails", status_code=201,
                summary="Task deleting the mails matching one of ?sender, ?name, ?recipient (none: clear)")
    def delete_mails(name: str, request: Request) -> Response:
        existing(name)
        query = request.query_params
        filters = {f: query[f.value] for f in RemoveField if query.get(f.value) is not None}
        for field in (RemoveField.SENDER, RemoveField.RECIPIENT):
            if field in filters:
                filters[field] = _address(field.value, filters[field])
        if not filters:
            return submitted(tasks.submit(ClearMailQueueTask(queues, name)))
        if len(filters) > 1:
            raise bad_request(None, "You should provide only one of the query parameters 'sender', 'name', "
                                    "'recipient' for deleting mails by condition or no parameter for deleting all "
                                    "mails in the mail queue.")
        [(field, value)] = filters.items()
        return submitted(tasks.submit(DeleteMailsFromMailQueueTask(queues, name, field, value)))

    @api.post("/mailQueues/{name}", status_code=201,
              summary="?action=RepublishNotProcessedMails&olderThan=1d: publish again mails the broker lost; "
                      "?action=updateBrowseStart: move the browse start of the queue's view now")
    def queue_action(name: str, request: Request) -> Response:
        action = params.selector(request.query_params.get("action"), "action", [REPUBLISH, UPDATE_BROWSE_START])
        existing(name)   # James accepts any name here; an unknown one would get a browse start written
        if action == UPDATE_BROWSE_START:
            return submitted(tasks.submit(BrowseStartUpdateTask(queues, name)))
        raw = request.query_params.get("olderThan")
        if not raw:
            raise bad_request("'olderThan' is mandatory")
        try:
            older_than = params.ago(raw, "days", datetime.now(UTC))
        except ValueError as exc:
            raise bad_request(str(exc), "Invalid 'olderThan' parameter") from exc
        return submitted(tasks.submit(RepublishNotProcessedMailsTask(queues, name, older_than)))

    return api


def _address(name: str, raw: str) -> str:
    try:
        return str(MailAddress.of(raw))
    except InvalidAddress as exc:
        raise WebAdminError(400, f"'{name}' should be a mail address (i.e. {name}@james.org)", str(exc)) from exc


def _item(item: QueueItemView) -> dict[str, Any]:
    mail = item.mail
    return {"name": mail.name, "sender": str(mail.sender) if mail.sender else None,
            "recipients": [str(r) for r in mail.recipients],
            "nextDelivery": format_instant(item.next_delivery) if item.next_delivery else None}
