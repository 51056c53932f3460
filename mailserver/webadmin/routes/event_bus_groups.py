"""``/events/groups`` (ours, ADR 0026; James has no such route): required vs registered event-bus groups.

``GET /events/groups`` answers the required groups (the event-sourced aggregate), the groups
registered in RabbitMQ, their divergence (missing, unexpected, orphan queues with their depth)
and the audit trail of the required groups. ``POST /events/groups?action=reset`` submits the
``event-bus-groups-reset`` task. Both read RabbitMQ's management API: without
``RABBITMQ_MANAGEMENT_URL`` (or without the required groups, the topology or the task manager)
they answer 503.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool

from mailserver.events.registered_groups import RegisteredGroups
from mailserver.events.required_groups import RequiredGroups
from mailserver.events.topology import BusTopology
from mailserver.tasks.builtin.event_bus_groups import MANAGEMENT_URL, EventBusGroupsResetTask, change_json, state_json
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import SERVER_ERROR, WebAdminError
from mailserver.webadmin.routes import params
from mailserver.webadmin.routes.tasks import submitted

RESET = "reset"


def unavailable(what: str, details: str | None = None) -> WebAdminError:
    return WebAdminError(503, f"{what} is not configured on this server", details, SERVER_ERROR)


def router(required: RequiredGroups | None, registered: RegisteredGroups | None, topology: BusTopology | None,
           tasks: TaskManager | None) -> APIRouter:
    api = APIRouter(tags=["event bus groups"])

    def sources() -> tuple[RequiredGroups, RegisteredGroups]:
        if required is None:
            raise unavailable("The required event-bus groups store")
        if registered is None:
            raise unavailable("The RabbitMQ management API",
                              f"set {MANAGEMENT_URL} to read the event-bus groups registered in RabbitMQ")
        return required, registered

    @api.get("/events/groups", summary="Required and registered event-bus groups, their divergence, the audit")
    def groups() -> dict[str, Any]:
        wanted, present = sources()
        try:
            state = present.state(wanted.current())
        except OSError as exc:   # the management API is down or refuses us: RabbitMQ's groups are unknown
            raise WebAdminError(503, "The RabbitMQ management API can not be reached", str(exc), SERVER_ERROR) from exc
        return {**state_json(state, present.names), "audit": [change_json(c) for c in wanted.audit()]}

    @api.post("/events/groups", status_code=201,
              summary="Task: ?action=reset binds the missing required groups, unbinds the others "
                      "(queues kept, reported with their depth)")
    async def reset(request: Request) -> Response:
        params.selector(request.query_params.get("action"), "action", [RESET])
        wanted, present = sources()
        if topology is None:
            raise unavailable("The event-bus topology")
        if tasks is None:
            raise unavailable("The task manager")
        return submitted(await run_in_threadpool(tasks.submit, EventBusGroupsResetTask(wanted, present, topology)))

    return api
