"""``/events/deadLetter`` (webadmin reference §13, James's ``EventDeadLettersRoutes``).

List groups and insertion ids, show or delete a dead letter, delete a group's, and redeliver
all / a group's / one as tasks (``?action=reDeliver``, ``limit`` for all and group). Groups are
validated as James's ``Group.deserialize`` does (a fully qualified name), insertion ids as UUIDs;
an event is answered as its stored JSON. Without dead letters (or without the bus or the task
manager, for redelivery) the routes answer 503 after validating the request.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.events.api import EventBus
from mailserver.events.dead_letters import EventDeadLetters
from mailserver.events.naming import DISPATCHING_FAILURE_GROUP_PREFIX
from mailserver.tasks.api import Task
from mailserver.tasks.builtin.event_dead_letters import (
    EventDeadLettersRedeliverAllTask,
    EventDeadLettersRedeliverGroupTask,
    EventDeadLettersRedeliverOneTask,
    groups_holding_letters,
)
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import SERVER_ERROR, WebAdminError, not_found
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted

NO_CONTENT = 204
RE_DELIVER = "reDeliver"
BASE = "/events/deadLetter"
GENERIC_GROUP_PREFIX = "org.apache.james.events.GenericGroup-"


def parse_group(raw: str) -> str:
    """James's ``Group.deserialize``: any fully qualified name (the class need not be loadable)."""
    if not raw:
        reason = "A serialized group can not be null or empty"
    elif raw.startswith((GENERIC_GROUP_PREFIX, DISPATCHING_FAILURE_GROUP_PREFIX)) or "." in raw:
        return raw
    else:
        reason = f"A serialized group must be a fully qualified name: {raw}"
    raise WebAdminError(400, f"Can not deserialize the supplied group: {raw}", reason)


def parse_insertion_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError as exc:
        raise WebAdminError(400, f"Can not deserialize the supplied insertionId: {raw}",
                            f"Invalid UUID string: {raw}") from exc


def parse_limit(raw: str | None) -> int | None:
    """James's ``RunningOptions``: a positive integer; 0, empty or absent mean no limit."""
    return params.positive_int(raw, "limit") or None


def unavailable(what: str) -> WebAdminError:
    return WebAdminError(503, f"{what} is not configured on this server", None, SERVER_ERROR)


def router(dead_letters: EventDeadLetters | None, bus: EventBus | None, tasks: TaskManager | None) -> APIRouter:
    api = APIRouter(tags=["event dead letters"])

    def store() -> EventDeadLetters:
        if dead_letters is None:
            raise unavailable("The event dead letters store")
        return dead_letters

    async def submit(make: Callable[..., Task], *args: object) -> Response:
        letters = store()
        if bus is None:
            raise unavailable("The event bus")
        if tasks is None:
            raise unavailable("The task manager")
        return submitted(await run_in_threadpool(tasks.submit, make(letters, bus, *args)))

    @api.get(f"{BASE}/groups", summary="Groups holding dead letters")
    def list_groups() -> list[str]:
        return groups_holding_letters(store())

    @api.get(f"{BASE}/groups/{{group}}", summary="Insertion ids of a group's dead letters, oldest first")
    def list_ids(group: str) -> list[str]:
        group = parse_group(group)
        return [str(i) for i in store().insertion_ids(group)]

    @api.get(f"{BASE}/groups/{{group}}/{{insertion_id}}", summary="A dead letter: the event's JSON as stored")
    def get_event(group: str, insertion_id: str, request: Request) -> Response:
        group, tid = parse_group(group), parse_insertion_id(insertion_id)
        letter = store().get(group, tid)
        if letter is None:   # James answers its "can not be found" page
            raise not_found(f"{request.method} {request.url.path} can not be found")
        return Response(letter.event_json, media_type="application/json")

    @api.delete(f"{BASE}/groups/{{group}}/{{insertion_id}}", status_code=NO_CONTENT,
                summary="Delete a dead letter (204 even if absent)")
    def delete_event(group: str, insertion_id: str) -> Response:
        group, tid = parse_group(group), parse_insertion_id(insertion_id)
        store().remove(group, tid)
        return Response(status_code=NO_CONTENT)

    @api.delete(f"{BASE}/groups/{{group}}", status_code=NO_CONTENT,
                summary="Delete every dead letter of a group (204 even if none)")
    def delete_group(group: str) -> Response:
        store().remove_group(parse_group(group))
        return Response(status_code=NO_CONTENT)

    @api.post(BASE, status_code=201, summary="Task: ?action=reDeliver every dead letter (limit)")
    async def redeliver_all(request: Request) -> Response:
        query = request.query_params
        params.selector(query.get("action"), "action", [RE_DELIVER])
        return await submit(EventDeadLettersRedeliverAllTask, parse_limit(query.get("limit")))

    @api.post(f"{BASE}/groups/{{group}}", status_code=201,
              summary="Task: ?action=reDeliver a group's dead letters (limit)")
    async def redeliver_group(group: str, request: Request) -> Response:
        query = request.query_params
        params.selector(query.get("action"), "action", [RE_DELIVER])
        group = parse_group(group)
        return await submit(EventDeadLettersRedeliverGroupTask, group, parse_limit(query.get("limit")))

    @api.post(f"{BASE}/groups/{{group}}/{{insertion_id}}", status_code=201,
              summary="Task: ?action=reDeliver one dead letter (an absent one: 0 redelivered, as James)")
    async def redeliver_one(group: str, insertion_id: str, request: Request) -> Response:
        params.selector(request.query_params.get("action"), "action", [RE_DELIVER])
        group, tid = parse_group(group), parse_insertion_id(insertion_id)
        return await submit(EventDeadLettersRedeliverOneTask, group, tid)

    return api
