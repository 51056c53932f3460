"""``/tasks`` (webadmin reference §3): list, read, await and cancel tasks of any node, and clean old ones up.

Also ``submitted``: the answer of every task-creating route (201, ``Location: /tasks/<id>``,
``{"taskId": ...}``).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from mailserver.tasks.api import AwaitTimeout, TaskExecutionDetails, TaskNotFound, TaskStatus, utc_now
from mailserver.tasks.builtin.tasks_cleanup import TasksCleanupTask
from mailserver.tasks.manager import TaskManager
from mailserver.webadmin.errors import SERVER_ERROR, WebAdminError, bad_request, not_found
from mailserver.webadmin.routes import params

NO_CONTENT = 204
MAX_AWAIT = timedelta(days=365)
# Query parameter -> which date of the report it bounds (strictly), and on which side.
DATE_FILTERS = {f"{date}{side}": (date, side) for date in ("submitted", "started", "completed", "failed")
                for side in ("Before", "After")}


def submitted(task_id: uuid.UUID) -> JSONResponse:
    return JSONResponse({"taskId": str(task_id)}, status_code=201, headers={"Location": f"/tasks/{task_id}"})


def parse_task_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError as exc:
        raise WebAdminError(400, "Invalid task id", f"Invalid UUID string: {raw}") from exc


def parse_timeout(raw: str | None) -> float:
    if not raw:
        return MAX_AWAIT.total_seconds()
    try:
        timeout = params.parse_duration(raw, "seconds")
    except ValueError as exc:
        raise WebAdminError(400, "Invalid timeout", str(exc)) from exc
    if timeout > MAX_AWAIT:
        raise WebAdminError(400, "Invalid timeout", "Timeout should not exceed 365 days")
    return timeout.total_seconds()


def router(tasks: TaskManager) -> APIRouter:
    api = APIRouter(tags=["tasks"])

    @api.get("/tasks", summary="Task reports, newest first; filters: status, type, dates, offset, limit")
    def list_tasks(request: Request) -> list[dict]:
        query = request.query_params
        status = None
        if query.get("status") is not None:
            try:
                status = TaskStatus.parse(query["status"])
            except ValueError as exc:
                raise WebAdminError(400, "Invalid status query parameter", str(exc)) from exc
        bounds = {name: _date(name, query[name]) for name in DATE_FILTERS if query.get(name)}
        start, count = params.offset(query.get("offset")), params.limit(query.get("limit"))
        reports = [d for d in tasks.list(status)
                   if (query.get("type") is None or d.type == query["type"]) and _within(d, bounds)]
        reports = reports[start:] if count is None else reports[start:start + count]
        return [d.to_json() for d in reports]

    @api.get("/tasks/{task_id}", summary="One task's report")
    def get_task(task_id: str) -> dict:
        tid = parse_task_id(task_id)
        try:
            return tasks.get(tid).to_json()
        except TaskNotFound as exc:
            raise not_found(f"{tid} can not be found") from exc

    @api.get("/tasks/{task_id}/await", summary="The report once finished (408 when ?timeout is reached)")
    async def await_task(task_id: str, timeout: str | None = None) -> dict:
        tid, seconds = parse_task_id(task_id), parse_timeout(timeout)
        try:
            return (await tasks.await_async(tid, seconds)).to_json()
        except AwaitTimeout as exc:
            raise WebAdminError(408, "The timeout has been reached", None, SERVER_ERROR) from exc
        except TaskNotFound as exc:
            raise WebAdminError(404, "The taskId is not found", None, SERVER_ERROR) from exc

    @api.delete("/tasks", status_code=201, summary="Task tasks-cleanup: forget the tasks submitted before now - "
                "olderThan that are finished or silent since then")
    def cleanup_tasks(olderThan: str | None = None) -> JSONResponse:
        if not olderThan:
            raise bad_request("missing or invalid `olderThan` parameter")
        try:
            cut_off = params.ago(olderThan.strip(), "seconds", utc_now())
        except ValueError as exc:
            raise bad_request(f"missing or invalid `olderThan` parameter: {exc}") from exc
        return submitted(tasks.submit(TasksCleanupTask(tasks.store, cut_off)))

    @api.delete("/tasks/{task_id}", status_code=NO_CONTENT, summary="Cancel a task (204 even if unknown)")
    def cancel_task(task_id: str) -> Response:
        tasks.cancel(parse_task_id(task_id))
        return Response(status_code=NO_CONTENT)

    return api


def _date(name: str, raw: str) -> datetime:
    # An unencoded '+' of the offset arrives as a space.
    text = raw.strip().replace(" ", "+")
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        value = None
    if value is None or value.tzinfo is None:
        raise bad_request(f"'{name}' must be an ISO-8601 date with an offset, "
                          f"e.g. 2023-04-15T07:23:27.541254+07:00: {raw}")
    return value


def _within(details: TaskExecutionDetails, bounds: dict[str, datetime]) -> bool:
    for name, bound in bounds.items():
        date_name, side = DATE_FILTERS[name]
        value = getattr(details, f"{date_name}_date")
        if value is None or not (value < bound if side == "Before" else value > bound):
            return False
    return True
